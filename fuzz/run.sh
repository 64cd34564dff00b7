#!/bin/sh
# run.sh — runs built fuzzers (fuzz/build/fuzz_NAME) for `make fuzz`
# (fuzz/fuzz.mk's run target): run.sh SRCDIR NAME... . Each gets a working
# corpus fuzz/build/corpus/NAME (new inputs land there; the seeds in the
# source tree stay as they are), reads its seeds and reproducers too, keeps a
# crash in fuzz/build/crash/NAME/, and logs to fuzz/build/fuzz_NAME.log.
# FUZZ_SECONDS bounds each one's time, FUZZ_RUNS its executions (-1: none),
# FUZZ_PARALLEL=yes runs them all at once instead of one after the other,
# FUZZ_ARGS goes to every libFuzzer command line. The harnesses that need a
# file write it under /dev/shm when there is one (a disk write per input was
# most of their time). Exits 1 when any fuzzer found something.
# Not the build (fuzz/fuzz.mk) nor the replay of corpora (tests/test_fuzz.sh).
src=$1
shift
B=fuzz/build
tmp=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm
one() {
    h=$1
    mkdir -p "$B/corpus/$h" "$B/crash/$h"
    extra=
    [ -d "$src/fuzz/regress/$h" ] && extra="$src/fuzz/regress/$h"
    # shellcheck disable=SC2086
    TMPDIR=$tmp OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 \
        "$B/fuzz_$h" "$B/corpus/$h" "$src/fuzz/corpus/$h" $extra -max_total_time="${FUZZ_SECONDS:-60}" \
        -runs="${FUZZ_RUNS:--1}" -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$B/crash/$h/" \
        $FUZZ_ARGS </dev/null >"$B/fuzz_$h.log" 2>&1
    echo $? >"$B/fuzz_$h.rc"
}
report() {
    h=$1
    rc=$(cat "$B/fuzz_$h.rc" 2>/dev/null || echo 1)
    # the last of each (a log holds one run, but take no chances with an appended one)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$B/fuzz_$h.log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$B/fuzz_$h.log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$B/fuzz_$h.log" | tail -1)
    files=$(ls "$B/corpus/$h" | wc -l)
    if [ "$rc" -eq 0 ]; then
        echo "fuzz_$h: ${runs:-?} runs in ${secs:-?} s (${rate:-?}/s), corpus $files files, no findings"
    else
        echo "fuzz_$h: FOUND something (exit $rc) after ${runs:-?} runs: see $B/fuzz_$h.log and $B/crash/$h/"
        grep -m1 -E 'ERROR|SUMMARY|deadly|leak|timeout' "$B/fuzz_$h.log" | sed 's/^/  /'
        status=1
    fi
}
status=0
for h in "$@"; do
    echo "== fuzz_$h: ${FUZZ_SECONDS:-60} s, runs ${FUZZ_RUNS:--1} (log: $B/fuzz_$h.log)"
    if [ "$FUZZ_PARALLEL" = yes ]; then one "$h" & else one "$h"; fi
done
wait
for h in "$@"; do report "$h"; done
exit $status
