# tests/local.mk — build rules for tests/ (included by the top-level Makefile.am).

# The hostile programs: C sources the sandbox must contain, each declaring its
# expected outcome on its first line; test_hostile runs them all (docs/sandbox.md).
check_PROGRAMS += tests/test_hostile
TESTS += tests/test_hostile
tests_test_hostile_SOURCES = tests/test_hostile.c tests/testutil.c
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_hostile_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/hostile

# Every spade command shown in README.md and docs/*.md, run as a reader types it
# (found automatically; the few that cannot run here are skipped with a reason).
TESTS += tests/test_docs.sh
EXTRA_DIST += tests/test_docs.sh
