#!/bin/sh
# tools/funclen.sh [MIN] — spade's own C functions longer than MIN lines (120
# by default), longest first, as "LINES FILE:LINE NAME": the list issue 15
# keeps short (llm.c's longest is 127). Run by hand; needs Universal Ctags
# (its end: field gives where each function ends).
# What it is not: a check make check runs, nor a measure of environment
# sources (stdenv/, plugins/, templates/, eval/) or of tests, benchmarks and
# fuzzers, whose long functions are scripts of steps.
min=${1:-120}
cd "$(dirname "$0")/.."
git ls-files '*.c' | grep -Ev '^(tests|bench|fuzz|stdenv|plugins|templates|eval)/' |
    xargs ctags -x --kinds-C=f --fields=+ne --_xformat='%N %F %n %e' |
    awk -v min="$min" '{ len = $4 - $3 + 1; if (len > min) printf "%5d %s:%d %s\n", len, $2, $3, $1 }' | sort -rn
