#!/bin/sh
# bench_servers.sh — episodes per second of `spade run` played in-process (this
# host's sandbox) and through one and two local `spade serve --listen` servers
# (`spade run --servers`, the C client), in the same run, with the same total
# worker processes and batch; prints each and its ratio to in-process.
# Usage: sh bench/bench_servers.sh [SPEC] [EPISODES] [REPEATS]   (from the build directory)
# The servers are on this host's loopback: what it shows is the protocol's cost
# (JSON both ways, a TCP hop, the blocks' join), and on a machine with the cores,
# what a second server's workers add; across hosts the network's latency comes
# on top of every step. Not a test: figures go to BENCHMARKS.md.
SPEC=${1:-maze:size=3}
N=${2:-2000}
REPEATS=${3:-3}
SPADE=${SPADE_BIN:-./spade}
export SPADE_BENCH_TOKEN=bench-token-0123456789abcdef
TMP=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT INT TERM
for s in a b; do
    "$SPADE" serve --listen tcp:127.0.0.1:0 --token-env SPADE_BENCH_TOKEN >"$TMP/$s" 2>&1 &
    pids="$pids $!"
    i=0; while ! grep -q '^listening on' "$TMP/$s" && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.1; done
done
A=$(sed -n 's/^listening on tcp://p' "$TMP/a")
B=$(sed -n 's/^listening on tcp://p' "$TMP/b")
now() { date +%s.%N; }
one() { # label, args...: prints the seconds of one run
    t0=$(now); "$SPADE" run "$SPEC" -n "$N" -q -b 64 "$@" >/dev/null 2>&1 || echo "run failed: $*" >&2; t1=$(now)
    echo "$t1 - $t0" | bc -l
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
: >"$TMP/local"; : >"$TMP/one"; : >"$TMP/two"
r=0
while [ $r -lt "$REPEATS" ]; do # alternating, so a busy machine slows all three alike
    one -w 2 >>"$TMP/local"
    one -w 2 --servers "$A" --token-env SPADE_BENCH_TOKEN >>"$TMP/one"
    one -w 1 --servers "$A,$B" --token-env SPADE_BENCH_TOKEN >>"$TMP/two"
    r=$((r + 1))
done
L=$(median <"$TMP/local")
echo "$SPEC, $N episodes, random agent, batch 64, 2 workers in all, median of $REPEATS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in local one two; do
    t=$(median <"$TMP/$k")
    printf '  %-22s %8.1f episodes/s  ratio to in-process %.2f\n' \
        "$(case $k in local) echo in-process ;; one) echo 'one server' ;; two) echo 'two servers' ;; esac)" \
        "$(echo "$N / $t" | bc -l)" "$(echo "$L / $t" | bc -l)"
done
