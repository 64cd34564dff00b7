#!/bin/sh
# stepcost.sh — user-space instructions per sandboxed step, counted by
# valgrind --tool=callgrind (deterministic, unlike steps/s on a busy machine).
#
#   bench/stepcost.sh [BUILDDIR]        (BUILDDIR: where bench/bench_stepcost is; default .)
#
# For each case (env, batch) it runs bench_stepcost under callgrind with two
# numbers of rounds and divides the difference of the instruction totals by the
# difference in steps, so start-up, compile and exit cancel out:
#   parent = the trainer's process: spade_vecenv_step, sandbox.c, ipc.c
#   worker = the worker process: its serve loop, the host, the runtime helpers
#            and the JIT'd environment (run by bench_stepcost --worker-profile)
# Kernel time (the system calls, the socket copies) is not in these figures.
# STEPCOST_CASES overrides the cases: "trivial:256 maze:1 ...".
# What it is not: a timing benchmark (bench/bench_sandbox is) nor a test.
set -eu
build=${1:-.}
prog="$build/bench/bench_stepcost"
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$prog" ] || { echo "stepcost.sh: $prog not built (make bench/bench_stepcost)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "stepcost.sh: valgrind not installed" >&2; exit 1; }
tmp=$(mktemp -d /tmp/spade-stepcost-sh-XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Runs a command with its stderr through a pipe: a worker sets RLIMIT_FSIZE to
# 0, so valgrind's messages to a regular file would kill it (SIGXFSZ). Its
# complaints about system calls it does not know (seccomp, pidfd_*) are dropped.
run() {
    { "$@" >/dev/null; echo $? >"$tmp/rc"; } 2>&1 | grep -v -e '^--[0-9]*-- ' >&2 || true
    [ "$(cat "$tmp/rc")" = 0 ] || { echo "stepcost.sh: failed: $*" >&2; exit 1; }
}

# Sum of the instruction totals of the profiles in a directory.
total() { cat "$1"/* 2>/dev/null | awk '/^summary:/ { s += $2 } END { printf "%.0f\n", s }'; }

# parent_ir ENV BATCH ROUNDS PARAMS ACTIONS
parent_ir() {
    rm -rf "$tmp/p"; mkdir "$tmp/p"
    run valgrind --tool=callgrind -q --callgrind-out-file="$tmp/p/cg.%p" "$prog" "$@"
    total "$tmp/p"
}

# worker_ir ENV BATCH ROUNDS PARAMS ACTIONS
worker_ir() {
    rm -rf "$tmp/w"; mkdir "$tmp/w"
    run "$prog" --worker-profile "$tmp/w/cg" "$@"
    total "$tmp/w"
}

printf '%-8s %5s %12s %12s %12s\n' env batch parent/step worker/step total/step
for c in ${STEPCOST_CASES:-trivial:256 trivial:1 maze:256 maze:1}; do
    env=${c%%:*}
    n=${c#*:}
    case $env in
    trivial) file="$src/bench/envs/trivial.c" params="" acts="go" ;;
    maze) file="$src/stdenv/maze.c" params="size=8,slack=20" acts="north,east,south,east,west,south" ;;
    *) echo "stepcost.sh: unknown env $env" >&2; exit 1 ;;
    esac
    # About 10k steps of difference at batch 256, 2k at batch 1.
    if [ "$n" -ge 64 ]; then r1=10 r2=$((10 + 10240 / n)); else r1=200 r2=2200; fi
    steps=$(((r2 - r1) * n))
    p1=$(parent_ir "$file" "$n" "$r1" "$params" "$acts")
    p2=$(parent_ir "$file" "$n" "$r2" "$params" "$acts")
    w1=$(worker_ir "$file" "$n" "$r1" "$params" "$acts")
    w2=$(worker_ir "$file" "$n" "$r2" "$params" "$acts")
    awk -v e="$env" -v n="$n" -v s="$steps" -v p1="$p1" -v p2="$p2" -v w1="$w1" -v w2="$w2" 'BEGIN {
        p = (p2 - p1) / s; w = (w2 - w1) / s
        printf "%-8s %5d %12.1f %12.1f %12.1f\n", e, n, p, w, p + w }'
done
