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
EXTRA_DIST += tests/test_python.sh tests/python/conftest.py tests/python/test_env.py tests/python/test_vector.py \
	tests/python/test_protocol.py tests/python/test_docs.py python/pyproject.toml python/README.md \
	python/spade/__init__.py python/spade/_client.py python/spade/env.py python/spade/vector.py python/spade/py.typed \
	bench/bench_py_vec.py
