#!/bin/sh
# test_lora.sh — `spade train` with LoRA adapters on a pretrained model, as a
# person runs it: the tiny random Llama of tests/make_tiny_gguf as [policy]
# model with lora_rank = 4; the run's checkpoints hold the adapters only and
# name the model by its SHA-256; the same run killed with SIGKILL at named
# points (core/killpoint.h) and resumed each time ends with the same
# iteration metrics as the uninterrupted run (timings aside); the checkpoint
# refuses a changed model file; `spade export` writes the merged weights.
# Not a test of the LoRA arithmetic (tests/test_lora.c) or of learning.

NAME=lora
. "${srcdir:-.}/tests/tap.sh"
. "$SRC/tests/killpoints.sh"

TINY=${TINY_GGUF_BIN:-$(pwd)/tests/make_tiny_gguf}
[ -x "$TINY" ] || { echo "tests/make_tiny_gguf not built at $TINY"; exit 99; }
"$TINY" llama "$TMP/tiny.gguf" 3 || exit 99

config() { # config DIR ITERATIONS
    cat <<EOF2
[run]
dir = $1
iterations = $2
seed = 5
[policy]
model = tiny.gguf
context = 256
backend = cpu_ref
lora_rank = 4
lora_alpha = 8
[pool]
envs = carry_add:digits=1
[agent]
envs = 2
plays = 4
max_action_tokens = 6
[grpo]
lr = 0.01
[designer]
enabled = false
EOF2
}
config straight 6 >"$TMP/straight.ini"
"$SPADE" train "$TMP/straight.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/straight/train.jsonl")" -eq 6 ]; then ok "a LoRA run on a model finishes"
else bad "a LoRA run on a model finishes"; fi

ck=$(ls "$TMP/straight"/policy-*.ckpt 2>/dev/null | head -1)
model_bytes=$(wc -c <"$TMP/tiny.gguf")
if [ -n "$ck" ] && [ "$(wc -c <"$ck")" -lt "$model_bytes" ] && grep -q "tiny.gguf" "$ck"; then
    ok "its checkpoint holds the adapters and names the model"
else bad "its checkpoint holds the adapters and names the model"; fi

"$SPADE" export "$ck" --gguf "$TMP/merged.gguf" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && "$SPADE" generate "$TMP/merged.gguf" --prompt hi --tokens 4 >/dev/null 2>&1; then
    ok "spade export merges the adapters into a model that loads"
else bad "spade export merges the adapters into a model that loads"; fi

# Killed at named points of the run, resumed each time: the straight run's metrics.
strip() { sed 's/,"t_play":[0-9.]*,"t_update":[0-9.]*}/}/' "$1"; }
config killed 6 >"$TMP/killed.ini"
kill_points "$TMP/killed.ini" "$TMP/killed" update:1 checkpoint:2 state:4
strip "$TMP/straight/train.jsonl" >"$TMP/a"
strip "$TMP/killed/train.jsonl" >"$TMP/b"
if [ "$kills" -eq 3 ] && cmp -s "$TMP/a" "$TMP/b"; then ok "killed at 3 named points and resumed = uninterrupted"
else bad "killed at 3 named points and resumed = uninterrupted (kills $kills, missed$missed)"; diff "$TMP/a" "$TMP/b" | head -5; fi

# Another file under the model's name: the run cannot resume onto it.
"$TINY" llama "$TMP/tiny.gguf" 4 || exit 99
"$SPADE" train "$TMP/straight" >"$TMP/out" 2>&1
if [ $? -ne 0 ] && grep -q "lora.base_sha256" "$TMP/out"; then ok "a changed model file is refused, naming the field"
else bad "a changed model file is refused, naming the field"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
