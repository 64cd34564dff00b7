# tests/local.mk — build rules for tests/ (included by the top-level Makefile.am).

# The hostile programs: C sources the sandbox must contain, each declaring its
# expected outcome on its first line; test_hostile runs them all (docs/sandbox.md).
check_PROGRAMS += tests/test_hostile
TESTS += tests/test_hostile
tests_test_hostile_SOURCES = tests/test_hostile.c tests/testutil.c
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_hostile_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/hostile

# Masked multi-turn GRPO (core/policy/grpo.c): cpu_ref exactness tests.
check_PROGRAMS += tests/test_grpo
TESTS += tests/test_grpo
tests_test_grpo_SOURCES = tests/test_grpo.c tests/testutil.c tests/testutil.h
tests_test_grpo_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_grpo_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
