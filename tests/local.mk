# tests/local.mk — build rules for tests/ (included by the top-level Makefile.am).

# The hostile programs: C sources the sandbox must contain, each declaring its
# expected outcome on its first line; test_hostile runs them all (docs/sandbox.md).
check_PROGRAMS += tests/test_hostile
TESTS += tests/test_hostile
tests_test_hostile_SOURCES = tests/test_hostile.c tests/testutil.c
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_hostile_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/hostile

# The Python package (python/) and `spade serve` (docs/protocol.md, docs/python.md): pytest in
# the .venv ./bootstrap makes; skipped with the reason when there is none.
TESTS += tests/test_python.sh
EXTRA_DIST += tests/test_python.sh tests/python python
