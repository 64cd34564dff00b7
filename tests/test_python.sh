#!/bin/sh
# test_python.sh — runs the Python suite (tests/python/: the package in python/ and the
# `spade serve` protocol, fuzzing included) with the virtual environment ./bootstrap makes
# (.venv in the source tree, with gymnasium and pytest from PyPI).
# Not the package's installation test: PYTHONPATH points at python/ so the tree's code is tested.
# Skips (exit 77) with the reason when the venv, gymnasium or pytest is missing.
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd)
builddir=$(pwd)
PY=${SPADE_TEST_PYTHON:-$srcdir/.venv/bin/python}
if [ ! -x "$PY" ]; then
  echo "SKIP: no Python at $PY (./bootstrap makes $srcdir/.venv with gymnasium and pytest)"
  exit 77
fi
if ! "$PY" -c 'import gymnasium, pytest' 2>/dev/null; then
  echo "SKIP: $PY has no gymnasium or pytest (./bootstrap installs them: .venv/bin/pip install gymnasium pytest)"
  exit 77
fi
SPADE_BIN=$builddir/spade PYTHONPATH=$srcdir/python PYTHONDONTWRITEBYTECODE=1 \
  exec "$PY" -m pytest -q -p no:cacheprovider "$srcdir/tests/python"
