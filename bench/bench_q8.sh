#!/bin/sh
# bench_q8.sh — decoding with policy.sample_weights = q8_0 against f32, the
# two interleaved in one run (load on a shared machine falls on both), and
# how far the 8-bit sampling drifts from the F32 one.
#
# What it is: bench/bench_llama on a GGUF model (SmolLM2-135M by default):
# decode at 1 and at SLOTS live slots (a PROMPT-token prompt each, GEN greedy
# tokens) with each setting, ROUNDS times, the load average beside every
# pair; then `q8check 64` (greedy agreement, largest |delta log-softmax|
# and the mean KL along the F32 greedy path), and the same for llama.cpp on
# spade's f32 and q8_0 exports of the model (bench/q8_llama_ref.py), when
# LLAMA_PY imports llama_cpp. Prints ratio = q8_0 / f32.
# What it is not: a test (nothing here fails on a ratio), nor a comparison
# with llama.cpp (bench/bench_llama.sh).
#
# Run from a built tree: make bench/bench_llama && bench/bench_q8.sh
# Environment: MODEL (default: smollm2-135m-instruct in the model cache),
# ROUNDS (2), SLOTS (32), PROMPT (16), GEN (32), LLAMA_PY (/work/llama-venv/bin/python),
# WORK (/tmp/spade-bench-q8: the exported files).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bl=$here/bench_llama
model=${MODEL:-${SPADE_MODELS:-$HOME/.cache/spade/models}/smollm2-135m-instruct.gguf}
rounds=${ROUNDS:-2}
slots=${SLOTS:-32}
prompt=${PROMPT:-16}
gen=${GEN:-32}
[ -x "$bl" ] || { echo "bench_q8: $bl not built (make bench/bench_llama)" >&2; exit 1; }
[ -f "$model" ] || { echo "bench_q8: no model at $model (spade model fetch smollm2-135m-instruct)" >&2; exit 1; }
load() { cut -d' ' -f1 /proc/loadavg; }
val() { sed -n "s/^$1 //p"; }
echo "bench_q8: $model, $rounds rounds, decode tokens/s (greedy, $prompt-token prompts, $gen tokens a slot)"
echo "(tokens/s of wall time, and tokens per CPU-second of the process: the second barely moves with the load)"
echo "| slots | f32 | q8_0 | ratio | f32 /CPU-s | q8_0 /CPU-s | ratio | load (before -> after) |"
echo "|---|---|---|---|---|---|---|---|"
r=0
while [ "$r" -lt "$rounds" ]; do
    for s in 1 "$slots"; do
        l0=$(load)
        oa=$("$bl" "$model" decode "$s" "$prompt" "$gen" --backend cpu --context 256 --sample-weights f32 2>/dev/null)
        ob=$("$bl" "$model" decode "$s" "$prompt" "$gen" --backend cpu --context 256 --sample-weights q8_0 2>/dev/null)
        a=$(printf '%s\n' "$oa" | val decode_tps)
        b=$(printf '%s\n' "$ob" | val decode_tps)
        ca=$(printf '%s\n' "$oa" | val decode_tokens_per_cpu_s)
        cb=$(printf '%s\n' "$ob" | val decode_tokens_per_cpu_s)
        ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "?" }')
        cratio=$(awk -v a="$ca" -v b="$cb" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "?" }')
        echo "| $s | $a | $b | $ratio | $ca | $cb | $cratio | $l0 -> $(load) |"
    done
    r=$((r + 1))
done
echo "bench_q8: q8_0 against f32 along a greedy path (load $(load)):"
out=$("$bl" "$model" q8check 64 --backend cpu --context 512 2>/dev/null)
printf '%s\n' "$out" | grep '^q8_' | grep -v '^q8_path'
# llama.cpp's own q8_0 drift on the same token path, from spade's exports of the model
lpy=${LLAMA_PY:-/work/llama-venv/bin/python}
if "$lpy" -c 'import llama_cpp' 2>/dev/null; then
    work=${WORK:-/tmp/spade-bench-q8}
    mkdir -p "$work"
    for t in f32 q8_0; do
        [ -f "$work/$t.gguf" ] || "$here/../spade" export "$model" --gguf "$work/$t.gguf" --type "$t" >/dev/null ||
            { echo "bench_q8: spade export --type $t failed" >&2; exit 1; }
    done
    P=$(printf '%s\n' "$out" | val q8_prompt_tokens)
    echo "bench_q8: llama.cpp, the same path through its own f32 and q8_0 files:"
    # shellcheck disable=SC2046
    "$lpy" "$here/q8_llama_ref.py" "$work/f32.gguf" "$work/q8_0.gguf" "$P" $(printf '%s\n' "$out" | val q8_path)
else
    echo "bench_q8: llama.cpp's q8_0 drift skipped: $lpy does not import llama_cpp"
fi
