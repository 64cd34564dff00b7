#!/bin/sh
# bench_llama.sh — spade against llama.cpp and PyTorch on a pretrained GGUF
# model (SmolLM2-135M by default), each figure of spade beside its reference
# measured in the same run, the two alternating so that the load of a shared
# machine falls on both; the load average is printed beside every pair.
#
# What it is: for the model file as shipped (quantized) and the same weights
# dequantized to F32 (tools/llama_reference.py --f32; made once into $WORK):
# prefill of a 1024-token prompt, decoding at 1 and at 32 live slots (spade:
# bench/bench_llama; llama.cpp: bench/llama_cpp_ref.py through
# llama-cpp-python); then spade's shared-prefix prefill against separate
# prefill; then a training step (forward, backward, AdamW) against
# transformers' LlamaForCausalLM in eager PyTorch (bench/torch_llama.py), with
# each side's peak RSS; and spade's load time. Prints ratio = spade /
# reference. spade dequantizes every tensor to F32 at load, so its figures
# for the two files differ only by noise, unless QUANT_SAMPLE has the
# quantized file's decoding sample from 8-bit or 4-bit copies (policy.sample_weights).
# What it is not: a test (nothing here fails on a ratio).
#
# Run from a built tree: make bench/bench_llama && bench/bench_llama.sh
# Environment: MODEL (default: smollm2-135m-instruct in the model cache),
# LLAMA_PY (/work/llama-venv/bin/python), TORCH_PY ($SPADE_TORCH_PYTHON),
# THREADS (2), ROUNDS (1), PREFILL (1024), GEN (32: tokens a slot decodes),
# SLOTS (32), PREFIX ("8 384 64"), TRAIN_T (256), TRAIN_STEPS (1), PARTS ("prefill decode prefix
# train load"), WORK (a directory for the F32 file, /tmp/spade-bench-llama), QUANT_SAMPLE
# (empty: F32; q8_0 or q4_1: spade's policy.sample_weights for the quantized file's decode rows).
# spade runs with no variable set (no OPENBLAS_CORETYPE, no OMP_NUM_THREADS):
# its own defaults, as a user gets them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bl=$here/bench_llama
model=${MODEL:-${SPADE_MODELS:-$HOME/.cache/spade/models}/smollm2-135m-instruct.gguf}
lpy=${LLAMA_PY:-/work/llama-venv/bin/python}
tpy=${TORCH_PY:-${SPADE_TORCH_PYTHON:-}}
threads=${THREADS:-2}
rounds=${ROUNDS:-1}
prefill=${PREFILL:-1024}
gen=${GEN:-32}
slots=${SLOTS:-32}
train_t=${TRAIN_T:-256}
train_steps=${TRAIN_STEPS:-1}
parts=${PARTS:-prefill decode prefix train load}
qsample=${QUANT_SAMPLE:-}
work=${WORK:-/tmp/spade-bench-llama}
[ -x "$bl" ] || { echo "bench_llama: $bl not built (make bench/bench_llama)" >&2; exit 1; }
[ -f "$model" ] || { echo "bench_llama: no model at $model (spade model fetch smollm2-135m-instruct)" >&2; exit 1; }

llama=yes
if ! "$lpy" -c 'import llama_cpp' 2>/dev/null; then
    llama=no
    echo "bench_llama: llama.cpp skipped: $lpy does not import llama_cpp"
fi
torch=yes
if [ -z "$tpy" ] || ! "$tpy" -c 'import torch, transformers' 2>/dev/null; then
    torch=no
    echo "bench_llama: torch skipped: no python with torch and transformers (set TORCH_PY)"
fi

f32=$work/$(basename "$model" .gguf)-f32.gguf
files=$model
if [ "$llama" = yes ]; then
    mkdir -p "$work"
    [ -f "$f32" ] || "$lpy" "$here/../tools/llama_reference.py" --f32 "$f32" "$model" >/dev/null ||
        { echo "bench_llama: cannot write $f32" >&2; exit 1; }
    files="$f32 $model"
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
val() { sed -n "s/^$1 //p" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# runs spade and the reference alternately, ROUNDS times; prints the mean of each and the ratio
pair() { # label key spade-args... -- ref-command...
    label=$1 key=$2
    shift 2
    sargs=
    while [ "$1" != -- ]; do sargs="$sargs $1"; shift; done
    shift
    s=0 r=0 n=0 l0=$(load)
    while [ "$n" -lt "$rounds" ]; do
        # shellcheck disable=SC2086
        x=$(env -u OPENBLAS_CORETYPE -u OMP_NUM_THREADS "$bl" $sargs 2>/dev/null | val "$key")
        s=$(awk -v a="$s" -v b="${x:-0}" 'BEGIN { print a + b }')
        if [ "$#" -gt 0 ]; then
            y=$("$@" 2>/dev/null | val "$key")
            r=$(awk -v a="$r" -v b="${y:-0}" 'BEGIN { print a + b }')
        fi
        n=$((n + 1))
    done
    s=$(awk -v a="$s" -v n="$n" 'BEGIN { printf "%.1f", a / n }')
    r=$(awk -v a="$r" -v n="$n" 'BEGIN { printf "%.1f", a / n }')
    printf '%-44s spade %8s  ref %8s  ratio %5s  load %s -> %s\n' "$label" "$s" "$r" "$(ratio "$s" "$r")" "$l0" "$(load)"
}

echo "bench_llama: $model, $threads threads, $rounds rounds, load average $(load)"
echo "bench_llama: spade: $(env -u OPENBLAS_CORETYPE "$bl" "$model" load --context 64 2>&1 >/dev/null | sed 's/^bench_llama: //')"
for f in $files; do
    kind=quantized
    [ "$f" = "$f32" ] && kind=F32
    ref() { [ "$llama" = yes ] && echo "$lpy $here/llama_cpp_ref.py $f $* --threads $threads"; }
    for part in $parts; do
        case $part in
        prefill)
            # shellcheck disable=SC2046
            pair "prefill $prefill tokens/s ($kind)" prefill_tps "$f" prefill "$prefill" --context $((prefill + 16)) -- \
                $(ref prefill "$prefill")
            ;;
        decode)
            sw='' swl=''
            [ "$kind" != F32 ] && [ -n "$qsample" ] && sw="--sample-weights $qsample" swl=", spade sample_weights $qsample"
            # shellcheck disable=SC2046,SC2086
            pair "decode tokens/s, 1 slot, $gen tokens ($kind$swl)" decode_tps "$f" decode 1 16 "$gen" --context 256 $sw -- \
                $(ref decode 1 16 "$gen")
            # shellcheck disable=SC2046,SC2086
            pair "decode tokens/s, $slots slots, $gen each ($kind$swl)" decode_tps "$f" decode "$slots" 16 "$gen" \
                --context 256 $sw -- $(ref decode "$slots" 16 "$gen")
            ;;
        esac
    done
done
for part in $parts; do
    case $part in
    prefix)
        # PREFIX="S P Q": S designer prompts, a P-token shared opening, Q tokens of their own
        set -- ${PREFIX:-8 384 64}
        out=$(env -u OPENBLAS_CORETYPE -u OMP_NUM_THREADS "$bl" "$model" prefix "$1" "$2" "$3" 16 \
            --context $(($2 + $3 + 32)) 2>/dev/null)
        printf '%-44s separate %ss  shared %ss  saving %sx  same tokens %s  max |dlogp| %s  load %s\n' \
            "prefix $1 x ($2 shared + $3 own)" "$(echo "$out" | val separate_s)" "$(echo "$out" | val shared_s)" \
            "$(echo "$out" | val saving)" "$(echo "$out" | val same_tokens)" "$(echo "$out" | val max_logprob_diff)" \
            "$(load)"
        ;;
    train)
        n=0
        while [ "$n" -lt "$rounds" ]; do
            l0=$(load)
            so=$(env -u OPENBLAS_CORETYPE -u OMP_NUM_THREADS "$bl" "$model" train "$train_t" "$train_steps" \
                --context "$train_t" 2>/dev/null)
            to=
            [ "$torch" = yes ] && to=$("$tpy" "$here/torch_llama.py" "$train_t" "$train_steps" "$threads" 2>/dev/null)
            st=$(echo "$so" | val train_tps) tt=$(echo "$to" | val train_tps)
            printf '%-44s spade %8s  ref %8s  ratio %5s  load %s -> %s\n' \
                "train tokens/s, T=$train_t, B=1, AdamW" "$st" "${tt:--}" "$(ratio "$st" "${tt:-0}")" "$l0" "$(load)"
            printf '%-44s spade %8s  ref %8s\n' "peak RSS MiB of that run" "$(echo "$so" | val peak_rss_mib)" \
                "$(echo "$to" | val peak_rss_mib)"
            n=$((n + 1))
        done
        ;;
    load)
        printf '%-44s %s s (RSS %s MiB)  load %s\n' "spade load time (quantized file)" \
            "$("$bl" "$model" load --context 2048 2>/dev/null | val load_s)" \
            "$("$bl" "$model" load --context 2048 2>/dev/null | val load_rss_mib)" "$(load)"
        ;;
    esac
done
