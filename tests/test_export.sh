#!/bin/sh
# test_export.sh — `spade export` end to end: a trained checkpoint of the
# tiny random Llama and Qwen2 models (tests/make_tiny_gguf) and, when it is
# fetched, SmolLM2-135M itself, exported at f32, f16 and q8_0; spade loads
# each file back and continues a prompt as the checkpoint does (f32: the
# --logprobs output byte for byte; f16 and q8_0: the same greedy
# continuation), and llama.cpp (tools/llama_reference.py) loads each file and
# gives the same tokens and greedy continuation as spade on that file, with
# log-softmax within TOL at f32 (bounds(), below, for f16 and q8_0, where
# llama.cpp also rounds the activations). Refusals: a GPT checkpoint, a bad --type, an
# unwritable OUT, each leaving no file.
# Not a test of the weights' rounding (tests/test_tiny_gguf.c checks it bit
# for bit) or of speed. By default SmolLM2 is exported at f32 only and
# checked against llama.cpp's fixture (tests/data/llama_ref, prompt p0);
# SPADE_LONG=1 adds f16, q8_0 and llama.cpp run on each export (each costs a
# load and a file of 150-540 MB). Without llama-cpp-python the
# llama.cpp checks are skipped and the suite exits 77 once the rest passed.
NAME=export
. "${srcdir:-.}/tests/tap.sh"
TINY=${TINY_GGUF_BIN:-$(pwd)/tests/make_tiny_gguf}
[ -x "$TINY" ] || { echo "tests/make_tiny_gguf not built at $TINY"; exit 99; }
PY=${SPADE_LLAMA_PY:-}
for p in "$SRC/.venv/bin/python" /work/llama-venv/bin/python; do
    [ -z "$PY" ] && [ -x "$p" ] && "$p" -c 'import llama_cpp' 2>/dev/null && PY=$p
done
skip_llama=""
[ -n "$PY" ] || skip_llama="no python with llama_cpp (llama-cpp-python) in .venv or /work/llama-venv; set SPADE_LLAMA_PY"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: needs python3 for the JSON"; exit 77; }
TOL=${TOL:-1e-3}

# compare FIXTURE JSONL TOL [PREFIX]: spade's --logprobs lines against llama.cpp's fixture (spade's top-K
# wider than llama.cpp's on the tiny models, 8 against 4, so that a near-tie at llama.cpp's K-th id, ranked
# 5th by spade at q8_0, is compared rather than counted as missing: it once read as an infinite delta); the greedy
# continuations must be identical (their first PREFIX tokens when PREFIX is given)
compare() {
    python3 - "$@" >"$TMP/out" 2>&1 <<'EOF'
import json, sys
ref = json.load(open(sys.argv[1]))["prompts"][0]
lines = [json.loads(l) for l in open(sys.argv[2])]
tol = float(sys.argv[3])
prefix = int(sys.argv[4]) if len(sys.argv) > 4 else 0
prom = [l for l in lines if not l["gen"]]
gen = [l["token"] for l in lines if l["gen"]]
ok = [l["token"] for l in prom] == ref["tokens"]
if not ok: print("the prompt's tokens differ:", [l["token"] for l in prom], ref["tokens"])
worst = 0.0
for l, r in zip(lines, ref["top"]):
    mine = dict((v, x) for v, x in l["top"])
    for v, x in r:
        worst = max(worst, abs(mine[v] - x) if v in mine else float("inf"))
g = ref["greedy"]  # llama.cpp keeps an end-of-generation token, spade stops before it
same = gen == g[:len(gen)] and len(g) - len(gen) <= 1
agree = next((i for i, (a, b) in enumerate(zip(gen, g)) if a != b), min(len(gen), len(g)))
print(f"max |delta log-softmax| {worst:.3g} (bound {tol:g}); greedy {len(gen)} tokens "
      f"{'identical' if same else f'identical for the first {agree}'}{f' (required: {prefix})' if prefix else ''}")
if not same: print("spade:", gen, "\nllama.cpp:", g)
if prefix: same = agree >= min(prefix, len(gen))
sys.exit(0 if ok and same and worst <= tol else 1)
EOF
}

# What llama.cpp must agree to on an export of type T: at f32 the log-softmax within TOL and the
# whole greedy continuation; at f16 llama.cpp rounds the activations to f16 for its dot products
# (measured 5e-3 on the tiny models), at q8_0 to q8_0 blocks (0.12-0.14 on the tiny models, whose
# random weights make large activations): within 2e-2 and the whole continuation at f16; within
# 0.5 and the first 16 tokens at q8_0, where a free-running greedy continuation may part later
bounds() {
    case $1 in
    f32) echo "$TOL" ;;
    f16) echo 2e-2 ;;
    q8_0) echo 0.5 16 ;;
    esac
}

# llama.cpp on GGUF with the prompt file: FIXTURE
llama_ref() {
    OMP_NUM_THREADS=1 "$PY" "$SRC/tools/llama_reference.py" "$1" --prompts "$2" --k 4 --gen "$3" --threads 1 \
        --out "$4" >"$TMP/out" 2>&1
}

# ---- refusals
"$SPADE" export "$SRC/tests/data/policy-v1-bytes.ckpt" --gguf "$TMP/gpt.gguf" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "a GPT checkpoint" "$TMP/out" && [ ! -e "$TMP/gpt.gguf" ] &&
    ok "a GPT checkpoint is refused, saying why, and nothing is written" ||
    bad "a GPT checkpoint is refused, saying why, and nothing is written"
"$SPADE" export "$SRC/tests/data/policy-v1-bytes.ckpt" --gguf "$TMP/x.gguf" --type q4_0 >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -q "expected f32, f16 or q8_0" "$TMP/out" && ok "--type q4_0 is a usage error" ||
    bad "--type q4_0 is a usage error"
"$SPADE" export "$SRC/tests/data/policy-v1-bytes.ckpt" >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -q -- "--gguf OUT.gguf is required" "$TMP/out" && ok "--gguf is required" ||
    bad "--gguf is required"

# ---- the tiny models: a trained checkpoint of each
P="int x; return the cat"
printf '%s' "$P" >"$TMP/p.txt"
for arch in llama qwen2; do
    "$TINY" "$arch" "$TMP/$arch.gguf" 5 >"$TMP/out" 2>&1 && "$TINY" --ckpt "$TMP/$arch.gguf" "$TMP/$arch.ckpt" \
        >>"$TMP/out" 2>&1 || { bad "$arch: the tiny model and its checkpoint"; continue; }
    "$SPADE" generate "$TMP/$arch.ckpt" --prompt-file "$TMP/p.txt" --tokens 24 --logprobs 8 >"$TMP/$arch.ckpt.jsonl" \
        2>"$TMP/out" || bad "$arch: spade generate on the checkpoint"
    for ty in f32 f16 q8_0; do
        out="$TMP/$arch-$ty.gguf"
        if ! "$SPADE" export "$TMP/$arch.ckpt" --gguf "$out" --type "$ty" >"$TMP/out" 2>&1; then
            bad "$arch $ty: spade export"
            continue
        fi
        grep -q "$arch, 2 layers, width 64, vocabulary 299, $ty" "$TMP/out" && ok "$arch $ty: exported ($(cut -d' ' -f2- "$TMP/out" | cut -c1-60)...)" ||
            bad "$arch $ty: exported"
        "$SPADE" generate "$out" --prompt-file "$TMP/p.txt" --tokens 24 --logprobs 8 --backend cpu_ref \
            >"$TMP/$arch-$ty.jsonl" 2>"$TMP/out" || { bad "$arch $ty: spade generate on the export"; continue; }
        if [ "$ty" = f32 ]; then
            cmp -s "$TMP/$arch.ckpt.jsonl" "$TMP/$arch-$ty.jsonl" &&
                ok "$arch f32: spade's log-probs and greedy continuation of the export are the checkpoint's, byte for byte" ||
                bad "$arch f32: spade's log-probs and greedy continuation of the export are the checkpoint's, byte for byte"
        else
            grep '"gen":1' "$TMP/$arch.ckpt.jsonl" | sed 's/,"top".*//' >"$TMP/g1"
            grep '"gen":1' "$TMP/$arch-$ty.jsonl" | sed 's/,"top".*//' >"$TMP/g2"
            cmp -s "$TMP/g1" "$TMP/g2" && ok "$arch $ty: spade's greedy continuation of the export is the checkpoint's" ||
                bad "$arch $ty: spade's greedy continuation of the export is the checkpoint's"
        fi
        [ -n "$skip_llama" ] && continue
        if ! llama_ref "$out" "$TMP/p.txt" 24 "$TMP/$arch-$ty.ref.json"; then
            bad "$arch $ty: llama.cpp loads the export"
            continue
        fi
        compare "$TMP/$arch-$ty.ref.json" "$TMP/$arch-$ty.jsonl" $(bounds "$ty")
        rc=$?
        sed 's/^/# /' "$TMP/out"
        [ $rc -eq 0 ] && ok "$arch $ty: llama.cpp gives spade's tokens and greedy continuation" ||
            bad "$arch $ty: llama.cpp gives spade's tokens and greedy continuation"
    done
done
ls "$TMP" | grep -q '\.tmp\.' && bad "no temporary file is left behind" || ok "no temporary file is left behind"

# ---- an unwritable OUT: an error naming it, nothing left
"$SPADE" export "$TMP/llama.ckpt" --gguf "$TMP/no/such/dir/m.gguf" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "no/such/dir/m.gguf" "$TMP/out" && ok "an unwritable OUT is an error naming it" ||
    bad "an unwritable OUT is an error naming it"

# ---- SmolLM2-135M, the model itself as CKPT (spade dequantizes its Q4_1 to the F32 it exports).
# By default f32 only, checked against llama.cpp's fixture for prompt p0 (tests/test_pretrained.sh's);
# SPADE_LONG=1 adds f16 and q8_0, spade on the model itself, and llama.cpp on each export.
MODEL=${SPADE_MODELS:-$HOME/.cache/spade/models}/smollm2-135m-instruct.gguf
if [ -f "$MODEL" ]; then
    types="f32"
    [ -n "$SPADE_LONG" ] && types="f32 f16 q8_0"
    S="$SRC/tests/data/llama_ref/p0.txt"
    if [ -n "$SPADE_LONG" ]; then
        "$SPADE" generate smollm2-135m-instruct --prompt-file "$S" --tokens 64 --logprobs 8 >"$TMP/smol.jsonl" \
            2>"$TMP/out" || bad "smollm2: spade generate"
    fi
    for ty in $types; do
        out="$TMP/smol-$ty.gguf"
        "$SPADE" export smollm2-135m-instruct --gguf "$out" --type "$ty" >"$TMP/out" 2>&1 || { bad "smollm2 $ty: export"; continue; }
        "$SPADE" generate "$out" --prompt-file "$S" --tokens 64 --logprobs 8 >"$TMP/smol-$ty.jsonl" 2>"$TMP/out" ||
            { bad "smollm2 $ty: spade generate on the export"; continue; }
        if [ "$ty" = f32 ]; then
            compare "$SRC/tests/data/llama_ref/smollm2-f32.json" "$TMP/smol-$ty.jsonl" "$TOL"
            rc=$?
            sed 's/^/# /' "$TMP/out"
            [ $rc -eq 0 ] && ok "smollm2 f32: the export agrees with llama.cpp's fixture on p0 (tokens, log-probs, greedy)" ||
                bad "smollm2 f32: the export agrees with llama.cpp's fixture on p0 (tokens, log-probs, greedy)"
        fi
        if [ -n "$SPADE_LONG" ]; then
            if [ "$ty" = f32 ]; then
                cmp -s "$TMP/smol.jsonl" "$TMP/smol-$ty.jsonl" &&
                    ok "smollm2 f32: the export computes what the model does, byte for byte" ||
                    bad "smollm2 f32: the export computes what the model does, byte for byte"
            else
                grep '"gen":1' "$TMP/smol.jsonl" | sed 's/,"top".*//' >"$TMP/g1"
                grep '"gen":1' "$TMP/smol-$ty.jsonl" | sed 's/,"top".*//' >"$TMP/g2"
                cmp -s "$TMP/g1" "$TMP/g2" && ok "smollm2 $ty: spade's greedy continuation of the export is the model's" ||
                    bad "smollm2 $ty: spade's greedy continuation of the export is the model's"
            fi
            if [ -z "$skip_llama" ]; then
                if llama_ref "$out" "$S" 64 "$TMP/smol-$ty.ref.json"; then
                    compare "$TMP/smol-$ty.ref.json" "$TMP/smol-$ty.jsonl" $(bounds "$ty")
                    rc=$?
                    sed 's/^/# /' "$TMP/out"
                    [ $rc -eq 0 ] && ok "smollm2 $ty: llama.cpp gives spade's tokens and greedy continuation" ||
                        bad "smollm2 $ty: llama.cpp gives spade's tokens and greedy continuation"
                else
                    bad "smollm2 $ty: llama.cpp loads the export"
                fi
            fi
        fi
        rm -f "$out"
    done
else
    echo "# SKIP smollm2: no $MODEL (spade model fetch smollm2-135m-instruct)"
fi

echo "1..$n"
[ "$fails" -eq 0 ] || exit 1
if [ -n "$skip_llama" ]; then
    echo "SKIP: the llama.cpp checks: $skip_llama"
    exit 77
fi
exit 0
