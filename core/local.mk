# core/local.mk — the engine both roles share (core never includes designer/ or agent/).
libspade_a_SOURCES += core/version.c
noinst_HEADERS += core/version.h
# The error-buffer formatter every part of the library reports failures with.
libspade_a_SOURCES += core/errbuf.c
noinst_HEADERS += core/errbuf.h
# SPADE_KILL_AT: the named points a kill-and-resume test dies at (docs/train.md, "Kill points").
libspade_a_SOURCES += core/killpoint.c
# The remote policy: chat completions from an OpenAI-compatible server over libcurl (docs/scale.md).
libspade_a_SOURCES += core/remote.c
noinst_HEADERS += core/remote.h
noinst_HEADERS += core/killpoint.h
# A client of the `spade serve` protocol and the episode loop over several servers (docs/scale.md).
libspade_a_SOURCES += core/serve_client.c core/served_episodes.c
noinst_HEADERS += core/serve_client.h core/served_episodes.h
# The seeded streams a run draws from (splitmix64 and self-play's (seed, iteration, slot, tag) streams).
libspade_a_SOURCES += core/rng.c
noinst_HEADERS += core/rng.h
noinst_HEADERS += core/host.h core/sandbox/sandbox.h core/tools/tools.h dsl/spade/env.h

# The in-process host (host.h) and its dlopen front end for gcc-built environments.
libspade_a_SOURCES += core/host.c core/native.c
noinst_HEADERS += core/native.h

# Test environments (tests/envs/*.c), compiled natively into shared objects that
# resolve the DSL helpers from the test program (linked -Wl,--export-dynamic).
# One rule per object: automake -Wall rejects %-pattern rules as non-portable.
SPADE_ENV_CC = $(CC) -std=c11 -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -I$(top_srcdir)/dsl
spade_test_envs = tests/envs/add.so tests/envs/counter.so tests/envs/bank.so tests/envs/chatty.so \
	tests/envs/echo.so tests/envs/bad_abi.so tests/envs/bad_nostep.so tests/envs/bad_param.so \
	tests/envs/bad_intparam.so tests/envs/bad_name.so tests/envs/bad_dupparam.so tests/envs/bad_bigstate.so \
	tests/envs/bad_tool.so
EXTRA_DIST += tests/envs/add.c tests/envs/counter.c tests/envs/bank.c tests/envs/chatty.c \
	tests/envs/echo.c tests/envs/bad_abi.c tests/envs/bad_nostep.c tests/envs/bad_param.c \
	tests/envs/bad_intparam.c tests/envs/bad_name.c tests/envs/bad_dupparam.c tests/envs/bad_bigstate.c \
	tests/envs/bad_tool.c
CLEANFILES += $(spade_test_envs)
$(spade_test_envs): $(top_srcdir)/dsl/spade/dsl.h $(top_srcdir)/core/env.h
	@$(MKDIR_P) tests/envs
	$(AM_V_CC)$(SPADE_ENV_CC) -o $@ $(srcdir)/$(@:.so=.c)
tests/envs/add.so: tests/envs/add.c
tests/envs/counter.so: tests/envs/counter.c
tests/envs/bank.so: tests/envs/bank.c
tests/envs/chatty.so: tests/envs/chatty.c
tests/envs/echo.so: tests/envs/echo.c
tests/envs/bad_abi.so: tests/envs/bad_abi.c
tests/envs/bad_nostep.so: tests/envs/bad_nostep.c
tests/envs/bad_param.so: tests/envs/bad_param.c
tests/envs/bad_intparam.so: tests/envs/bad_intparam.c
tests/envs/bad_name.so: tests/envs/bad_name.c
tests/envs/bad_dupparam.so: tests/envs/bad_dupparam.c
tests/envs/bad_bigstate.so: tests/envs/bad_bigstate.c
tests/envs/bad_tool.so: tests/envs/bad_tool.c

check_PROGRAMS += tests/test_host
TESTS += tests/test_host
tests_test_host_SOURCES = tests/test_host.c tests/testutil.c tests/testutil.h
# -iquote, not -I, for core/: core/check.h (the environment checker) would
# otherwise shadow Check's <check.h>.
tests_test_host_CPPFLAGS = -include $(top_builddir)/config.h -I$(top_srcdir) -iquote $(top_srcdir)/core \
	-I$(top_srcdir)/dsl -DSPADE_SRCDIR='"$(abs_top_srcdir)"' -DSPADE_BUILDDIR='"$(abs_top_builddir)"'
tests_test_host_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_host_LDFLAGS = $(AM_LDFLAGS) -Wl,--export-dynamic
tests_test_host_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_tests_test_host_DEPENDENCIES = $(spade_test_envs)

# The checker and the registry live in the library: the CLI, tests/test_stdenv.c
# and the designer call spade_check; the trainer hot-loads through the registry.
libspade_a_SOURCES += core/check.c core/registry.c
# The checker's parts: its plays through the episode layer, and the checks (check_internal.h).
libspade_a_SOURCES += core/check_play.c core/check_determinism.c core/check_checks.c
# Source text as the archive compares it (source), the held-out guard (heldout), diversity (vendi),
# and the run archive with the designer's memory query (archive, SQLite).
libspade_a_SOURCES += core/heldout.c core/source.c core/vendi.c core/archive.c
noinst_HEADERS += core/heldout.h core/source.h core/vendi.h core/archive.h
noinst_HEADERS += core/check.h core/check_internal.h core/registry.h

check_PROGRAMS += tests/test_vendi
TESTS += tests/test_vendi
tests_test_vendi_SOURCES = tests/test_vendi.c tests/testutil.c tests/testutil.h
tests_test_vendi_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_vendi_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/test_archive
TESTS += tests/test_archive
tests_test_archive_SOURCES = tests/test_archive.c tests/testutil.c tests/testutil.h
tests_test_archive_CPPFLAGS = $(AM_CPPFLAGS) -DSPADE_BUILDDIR='"$(abs_top_builddir)"'
tests_test_archive_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_archive_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_tests_test_archive_DEPENDENCIES = spade$(EXEEXT)
# The episode layer (episodes.h): everything that plays episodes goes through
# it; agents.c holds the agents core ships (random, solve, stdin, scripted).
libspade_a_SOURCES += core/episodes.c core/agents.c core/ep_order.c
# The layer's parts: the phases of a round and the recovery from a dead worker (episodes_internal.h).
libspade_a_SOURCES += core/episodes_phases.c core/episodes_recovery.c
noinst_HEADERS += core/episodes.h core/episodes_internal.h core/agents.h core/ep_order.h
# <spade/spade.h> (include/spade/spade.h): the public API of libspade.so.
libspade_a_SOURCES += core/spade.c

# The roles' turns on a chat model (chat.h): the agent's and the hint arm's system
# lines, and the designer's system card, which is generated from the marked section
# of docs/dsl.md (into the build directory, like core/jit's headers).
libspade_a_SOURCES += core/chat.c
noinst_HEADERS += core/chat.h
nodist_libspade_a_SOURCES += core/chat_card.c
BUILT_SOURCES += core/chat_card.c
CLEANFILES += core/chat_card.c
EXTRA_DIST += core/chat_card.sh

core/chat_card.c: $(top_srcdir)/docs/dsl.md $(top_srcdir)/core/chat_card.sh
	$(AM_V_GEN)$(MKDIR_P) core && \
	$(SHELL) $(top_srcdir)/core/chat_card.sh $(top_srcdir)/docs/dsl.md > $@-t && \
	mv -f $@-t $@
