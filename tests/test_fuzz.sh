#!/bin/sh
# test_fuzz.sh — replays every fuzz harness's seed corpus (fuzz/corpus/NAME/)
# and every kept reproducer of a fixed finding (fuzz/regress/NAME/) through
# the harness built by the normal compiler (fuzz/build/replay_NAME, made
# before the tests by check_DATA in fuzz/local.mk), so a finding that was
# fixed stays fixed. Not the fuzzing itself (`make fuzz`, docs/fuzzing.md).
NAME=fuzz
. "${srcdir:-.}/tests/tap.sh"
[ -n "$FUZZ_HARNESSES" ] || { echo "FUZZ_HARNESSES not set (run through make check)"; exit 99; }
for h in $FUZZ_HARNESSES; do
    bin=fuzz/build/replay_$h
    if [ ! -x "$bin" ]; then bad "replay_$h is built"; continue; fi
    seeds=$(ls "$SRC/fuzz/corpus/$h" 2>/dev/null | wc -l)
    if [ "$seeds" -lt 1 ]; then bad "fuzz/corpus/$h has seeds"; continue; fi
    dirs="$SRC/fuzz/corpus/$h"
    [ -d "$SRC/fuzz/regress/$h" ] && dirs="$dirs $SRC/fuzz/regress/$h"
    # shellcheck disable=SC2086
    if OPENBLAS_NUM_THREADS=1 "$bin" $dirs >"$TMP/out" 2>&1; then
        ok "fuzz_$h: $(tail -1 "$TMP/out") ($seeds seeds$([ -d "$SRC/fuzz/regress/$h" ] && echo ", $(ls "$SRC/fuzz/regress/$h" | wc -l) reproducers"))"
    else
        bad "fuzz_$h: an input of its corpus or reproducers fails (exit $?)"
    fi
done
echo "1..$n"
[ "$fails" -eq 0 ]
