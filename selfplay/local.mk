# selfplay/local.mk — the self-play loop (included by the top-level Makefile.am).
# It composes the roles: selfplay -> designer, agent -> core; neither role
# includes it, and core includes none of them.
selfplay_sources = selfplay/loop.c selfplay/iteration.c
noinst_HEADERS += selfplay/loop.h selfplay/iteration.h
spade_SOURCES += $(selfplay_sources)

TESTS += tests/test_selfplay.sh
EXTRA_DIST += tests/test_selfplay.sh
# The iteration's phases one at a time (selfplay/iteration.h): the mutations the
# run-level suites let through (tests/test_iteration.c).
check_PROGRAMS += tests/test_iteration
TESTS += tests/test_iteration
tests_test_iteration_SOURCES = tests/test_iteration.c $(selfplay_sources) $(designer_sources) $(agent_sources) tests/testutil.c \
	tests/testutil.h
tests_test_iteration_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_iteration_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/envs/lp_mark.c

# The template designer's decoding (selfplay/template.c) and its tests: the
# splice, the transcript's mask, the shipped template's gates (tests/test_template.c),
# and a micro run of [designer] source = template (tests/test_template.sh).
selfplay_sources += selfplay/template.c
noinst_HEADERS += selfplay/template.h
check_PROGRAMS += tests/test_template
TESTS += tests/test_template tests/test_template.sh
tests_test_template_SOURCES = tests/test_template.c selfplay/template.c $(designer_sources) $(agent_sources) \
	tests/testutil.c tests/testutil.h
tests_test_template_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_template_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/test_template.sh tests/envs/tmpl_mark.c configs/default-template.ini
