#!/bin/sh
# tools/format.sh — spade's own C through clang-format 14 and the tree's
# .clang-format: `check` (the default) lists every file that would change and
# exits 1, `apply` rewrites them. make format / make format-check call it;
# tests/test_format.sh runs the check in make check.
# What it is not: applied to environment sources (stdenv/, plugins/, templates/,
# eval/, tests/hostile/, tests/envs/, bench/envs/: data the designer is grounded
# on, kept as their authors wrote them) or to generated files.
set -e
mode=${1:-check}
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
files=$(find agent bench cli core designer dsl fuzz include selfplay tests \
    \( -path tests/hostile -o -path tests/envs -o -path bench/envs -o -path fuzz/corpus -o -path fuzz/regress \) -prune -o \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print |
    grep -v -e '^core/paths\.h$' -e '^core/chat_card\.c$' -e '^core/jit/jit_headers\.c$' -e '^core/policy/bpe_unicode\.h$' | sort)
case $mode in
apply) $CLANG_FORMAT -i $files ;;
check)
    bad=0
    for f in $files; do
        if ! $CLANG_FORMAT --dry-run --Werror "$f" >/dev/null 2>&1; then
            echo "format: $f differs from .clang-format (tools/format.sh apply rewrites it)"
            bad=1
        fi
    done
    exit $bad
    ;;
*) echo "usage: tools/format.sh [check|apply]" >&2; exit 2 ;;
esac
