# designer/local.mk — build rules for designer/ (included by the top-level Makefile.am).
# The designer role: the grounding corpus (corpus), the prompt within a token
# budget (prompt), the reward arithmetic (reward), and the validation gates (gates: the runner in gates.c,
# the shared run, determinism, the behavioural gates and novelty in gates_*.c). designer/ may include
# core/; core never includes designer/.
designer_sources = designer/corpus.c designer/prompt.c designer/reward.c designer/gates.c designer/plays.c designer/hints.c
designer_sources += designer/gates_play.c designer/gates_determinism.c designer/gates_agents.c designer/gates_novelty.c
noinst_HEADERS += designer/corpus.h designer/prompt.h designer/reward.h designer/gates.h designer/plays.h designer/hints.h
noinst_HEADERS += designer/gates_internal.h
designer_sources += designer/variants.c
noinst_HEADERS += designer/variants.h
spade_SOURCES += $(designer_sources)

check_PROGRAMS += tests/test_designer
TESTS += tests/test_designer
tests_test_designer_SOURCES = tests/test_designer.c $(designer_sources) tests/testutil.c tests/testutil.h
tests_test_designer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_designer_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/test_gates
TESTS += tests/test_gates
tests_test_gates_SOURCES = tests/test_gates.c $(designer_sources) tests/testutil.c tests/testutil.h
tests_test_gates_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_gates_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/envs/gate_bigret.c tests/envs/gate_slow.c tests/envs/gate_crashmax.c tests/envs/gate_global.c \
	tests/envs/gate_stepglobal.c tests/envs/gate_probecrash.c tests/envs/gate_coin.c tests/envs/gate_emptywin.c \
	tests/envs/gate_hintanswer.c tests/envs/gate_badsolve.c tests/envs/gate_direction.c tests/envs/gate_impossible.c
# The fast gates against their slow reference (tests/gates_ref.c), and the
# sandbox and episode-layer pieces they stand on.
check_PROGRAMS += tests/test_gates_fast
TESTS += tests/test_gates_fast
tests_test_gates_fast_SOURCES = tests/test_gates_fast.c tests/gates_ref.c $(designer_sources) tests/testutil.c \
	tests/testutil.h
tests_test_gates_fast_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_gates_fast_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/envs/gate_bigstate.c

# Designer templates ([designer] source = template): the parser and splicer
# (designer/template.c), and the shipped templates, data like stdenv: sources
# with @@ holes, installed to $(pkgdatadir)/templates. tests/test_template
# (selfplay/local.mk) fills them and runs the gates.
designer_sources += designer/template.c designer/remote_designer.c
noinst_HEADERS += designer/template.h designer/remote_designer.h
templatesdir = $(pkgdatadir)/templates
templates_DATA = templates/cups.c
EXTRA_DIST += $(templates_DATA)
