#!/bin/sh
# test_threads.sh — spade's OpenMP default (cli/main.c, docs/performance.md):
# the policy's threads wait passively unless the user set OMP_WAIT_POLICY or
# GOMP_SPINCOUNT, and the setting changes no result: a seeded micro `spade
# train` (rollouts and updates) writes the same metrics under the default,
# under libgomp's own active spinning and under an explicit spin count.
# Not a speed test: the figures are bench/bench_rollout's (BENCHMARKS.md).

NAME=threads
. "${srcdir:-.}/tests/tap.sh"

# libgomp prints what it read at start-up with OMP_DISPLAY_ENV=verbose; the
# spin count is what the wait policy comes down to (0: passive). A command
# that runs the policy re-executes spade once with the default set: the last
# process's figure is the one that counts.
spin() { env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$@" "$SPADE" eval --help 2>&1 | sed -n "s/.*GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" | tail -n 1; }
if [ -z "$(spin)" ]; then
    echo "# this spade does not use libgomp (no OpenMP in this build): the wait-policy checks skip"
else
    s=$(spin)
    if [ "$s" = 0 ]; then ok "spade eval waits passively by default (GOMP_SPINCOUNT 0)"; else bad "spade eval waits passively by default (spin count $s)"; fi
    s=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$SPADE" --version 2>&1 | grep -c GOMP_SPINCOUNT)
    if [ "$s" = 1 ]; then ok "a command that runs no policy is not re-executed"; else bad "a command that runs no policy is not re-executed ($s start-ups)"; fi
    s=$(spin OMP_WAIT_POLICY=active)
    if [ "$s" != 0 ] && [ -n "$s" ]; then ok "OMP_WAIT_POLICY=active set by the user wins (spin count $s)"; else bad "OMP_WAIT_POLICY=active set by the user wins (spin count $s)"; fi
    s=$(spin GOMP_SPINCOUNT=5000)
    if [ "$s" = 5000 ]; then ok "GOMP_SPINCOUNT set by the user wins"; else bad "GOMP_SPINCOUNT set by the user wins (spin count $s)"; fi
fi

mkdir -p "$TMP/pool"
config() { # config DIR
    cat <<EOF2
[run]
dir = $1
iterations = 3
seed = 9
[policy]
layers = 2
heads = 2
width = 32
context = 96
backend = cpu
[pool]
envs = carry_add:digits=1
[agent]
envs = 2
plays = 8
max_action_tokens = 6
[grpo]
lr = 0.01
[designer]
enabled = false
EOF2
}
strip() { sed 's/,"t_play":[0-9.]*,"t_update":[0-9.]*}/}/' "$1"; }
for w in default active spin; do
    config "$TMP/$w" >"$TMP/$w.ini"
    case $w in
    default) env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$SPADE" train "$TMP/$w.ini" >"$TMP/out" 2>&1 ;;
    active) env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active "$SPADE" train "$TMP/$w.ini" >"$TMP/out" 2>&1 ;;
    spin) env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000 "$SPADE" train "$TMP/$w.ini" >"$TMP/out" 2>&1 ;;
    esac
    if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/$w/train.jsonl")" -eq 3 ]; then ok "a seeded micro run ($w wait policy) finishes"
    else bad "a seeded micro run ($w wait policy) finishes"; fi
    strip "$TMP/$w/train.jsonl" >"$TMP/$w.m"
done
if cmp -s "$TMP/default.m" "$TMP/active.m" && cmp -s "$TMP/default.m" "$TMP/spin.m" && grep -q '"sampled_tokens":[1-9]' "$TMP/default.m"; then
    ok "the same seeded rollouts and updates under every wait policy"
else
    diff "$TMP/default.m" "$TMP/active.m" >"$TMP/out"
    bad "the same seeded rollouts and updates under every wait policy"
fi
[ $fails -eq 0 ]
