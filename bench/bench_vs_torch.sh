#!/bin/sh
# bench_vs_torch.sh — spade's cpu backend against eager PyTorch on the CPU, the
# peer a user would pick: the same GPT, the same AdamW, the same tokens, 2
# threads each, side by side in one run, at the four configurations of issue 7.
#
# What it is: for each configuration, ROUNDS rounds that alternate spade and
# torch (bench/torch_gpt.py), so that load on a shared machine falls on all of them
# alike; it prints each one's mean tokens/s and the ratio spade / torch, with
# the load average before and after. One command: `bench/bench_vs_torch.sh`
# from a built tree (make bench/bench_policy). What it is not: a test (nothing
# here fails on a ratio) or a correctness check (tests/test_policy.c).
#
# PyTorch: $SPADE_TORCH_PYTHON, else bench/.venv/bin/python; where neither
# imports torch the torch column says "skipped" and only spade runs. To make the
# venv: python3 -m venv bench/.venv && bench/.venv/bin/pip install torch
# (the PyPI wheel, see BENCHMARKS.md for what it needed here).
# Environment: ROUNDS (default 3), THREADS (default 2), QUICK=1 (one step each:
# a smoke run).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bp=${SPADE_BENCH_POLICY:-$here/bench_policy}
py=${SPADE_TORCH_PYTHON:-$here/.venv/bin/python}
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
[ -x "$bp" ] || { echo "bench_vs_torch: $bp not built (make bench/bench_policy)" >&2; exit 1; }

torch=yes
if ! [ -x "$py" ] || ! "$py" -c 'import torch' 2>/dev/null; then
    torch=no
    echo "bench_vs_torch: torch skipped: no python with torch at $py (set SPADE_TORCH_PYTHON)"
fi

export OMP_NUM_THREADS=$threads
echo "bench_vs_torch: $threads threads, $rounds rounds, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench_vs_torch: spade: $("$bp" --note)"

tok() { sed -n 's/.* \([0-9][0-9]*\) tokens\/s.*/\1/p'; }

# L C NH T B steps (steps sized for a few seconds each at the issue's speeds)
printf '%s\n' "4 128 4 256 8 10" "6 384 6 256 4 3" "6 384 6 256 8 2" "12 768 12 128 2 3" |
while read -r L C NH T B steps; do
    [ "${QUICK:-0}" = 1 ] && steps=1
    s=0; t=0
    r=0
    while [ "$r" -lt "$rounds" ]; do
        x=$("$bp" --train cpu "$L" "$C" "$NH" "$T" "$B" "$steps" | tok)
        s=$((s + x))
        if [ "$torch" = yes ]; then
            x=$("$py" "$here/torch_gpt.py" "$L" "$C" "$NH" "$T" "$B" "$steps" "$threads" | tok)
            t=$((t + x))
        fi
        r=$((r + 1))
    done
    cfg="L$L C$C NH$NH T$T B$B"
    line="$cfg: spade $((s / rounds)) tokens/s"
    if [ "$torch" = yes ]; then
        line="$line, torch $((t / rounds)) tokens/s; RATIO spade/torch $(awk "BEGIN{printf \"%.2f\", $s/$t}")"
    else
        line="$line, torch skipped"
    fi
    echo "$line"
done
echo "bench_vs_torch: load average after $(cut -d' ' -f1-3 /proc/loadavg)"
