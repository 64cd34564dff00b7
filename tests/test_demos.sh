#!/bin/sh
# test_demos.sh — `spade demos` as a person runs it: the same command gives the
# same files; --params-sweep plays several settings; a bad spec and a missing
# --out are refused with a message; spade pretrain reads the .transcript files
# as special tokens (a micro run on them starts and says how many tokens).
# Not the byte-for-byte comparison with the transcript API (tests/test_demos.c).
NAME=demos
. "${srcdir:-.}/tests/tap.sh"
export SPADE_PATH="$SRC/stdenv"
cd "$TMP" || exit 99

"$SPADE" demos carry_add:digits=1 nim --episodes 12 --params-sweep --hint --designer 1 --out a >"$TMP/out" 2>&1
rc1=$?
"$SPADE" demos carry_add:digits=1 nim --episodes 12 --params-sweep --hint --designer 1 --out b >"$TMP/out2" 2>&1
if [ $rc1 -eq 0 ] && [ $? -eq 0 ] && diff -r a b >/dev/null && [ -s a/nim.transcript ] && [ -s a/nim.designer.transcript ]; then
    ok "the same command writes the same files"
else bad "the same command writes the same files"; fi
if grep -q "12 episodes over 8 settings, 12 won by SOLVE" "$TMP/out" && [ "$(grep -c '^<|agent|>' a/nim.transcript)" -eq 12 ]; then
    ok "a sweep plays 8 settings and writes every won episode"
else bad "a sweep plays 8 settings and writes every won episode"; fi
if grep -q 'ENV("nim_' a/nim.designer.transcript && grep -q "passing spade check written" "$TMP/out"; then
    ok "a designer variant is written with a new name"
else bad "a designer variant is written with a new name"; fi

"$SPADE" demos no_such_env --out c >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "no_such_env" "$TMP/out"; then ok "an unknown environment is an error naming it"; else bad "an unknown environment is an error naming it"; fi
"$SPADE" demos carry_add:nope=3 --out c >"$TMP/out" 2>&1
if [ $? -ne 0 ] && grep -q "nope" "$TMP/out"; then ok "an unknown param is an error naming it"; else bad "an unknown param is an error naming it"; fi
"$SPADE" demos carry_add >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q -- "--out" "$TMP/out"; then ok "a missing --out is a usage error"; else bad "a missing --out is a usage error"; fi

# The held-out suite never reaches the data (core/heldout.h's guard): a held-out file named by its path,
# a renamed copy of one in another directory, and a held-out name found through SPADE_PATH as a --pairs
# grounding are refused, exit 1 naming the file and why, before anything is written under --out
"$SPADE" demos "$SRC/eval/heldout/base_convert.c" --episodes 4 --out h >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "base_convert.c is in the held-out suite" "$TMP/out" && grep -q "SPADE_HELDOUT" "$TMP/out" && [ ! -e h ]; then
    ok "a held-out file is refused, naming it, and nothing is written"
else bad "a held-out file is refused, naming it, and nothing is written"; fi
mkdir -p mine h2 && cp "$SRC/eval/heldout/base_convert.c" mine/my_convert.c
"$SPADE" demos nim mine/my_convert.c --episodes 4 --designer 1 --out h2 >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "mine/my_convert.c is a copy of the held-out environment base_convert" "$TMP/out" && [ -z "$(ls -A h2)" ]; then
    ok "a renamed copy of a held-out file elsewhere is refused, and nothing is written (not even nim's)"
else bad "a renamed copy of a held-out file elsewhere is refused, and nothing is written (not even nim's)"; fi
SPADE_PATH="$SRC/stdenv:$SRC/eval/heldout" "$SPADE" demos nim clock_add --episodes 0 --pairs --rewrite 1 --out h3 >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "clock_add.c is in the held-out suite" "$TMP/out" && [ ! -e h3 ]; then
    ok "a held-out name found through SPADE_PATH is refused as a --pairs and --rewrite source"
else bad "a held-out name found through SPADE_PATH is refused as a --pairs and --rewrite source"; fi

cat >pt.ini <<EOF2
[policy]
layers = 1
heads = 2
width = 32
context = 64
[pretrain]
data = a
out = pt
steps = 2
batch = 2
EOF2
"$SPADE" pretrain pt.ini >"$TMP/out" 2>&1
# bytes: every character one token, except each 7-15 byte marker which is one
bytes=$(cat a/*.transcript | wc -c)
tokens=$(sed -n 's/.*"tokens":\([0-9]*\).*/\1/p' pt/pretrain.jsonl | head -1)
if [ -n "$tokens" ] && [ "$tokens" -lt "$bytes" ] && [ "$tokens" -gt $((bytes / 3)) ]; then
    ok "pretrain reads the markers as special tokens ($tokens tokens from $bytes bytes)"
else bad "pretrain reads the markers as special tokens (tokens '$tokens', bytes $bytes)"; fi

# The base recipe (docs/train.md) at toy size: its data script, one step of
# configs/base.ini on that data, one small iteration of configs/base-train.ini.
(cd "$SRC" && POOL_EPISODES=2 SWEEP_EPISODES=1 DESIGNER=0 configs/base-data.sh "$TMP/bd" "$SPADE") >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -s bd/pool/carry_add.transcript ] && [ -s bd/sweep/nim.transcript ] && [ -s bd/stdenv/nim.c ]; then
    ok "configs/base-data.sh builds the data directory"
else bad "configs/base-data.sh builds the data directory"; fi
# its data and out paths as shipped, in the tree's layout: configs/ beside runs/, run from the top
mkdir -p "$TMP/tree/configs" "$TMP/tree/runs"
ln -s "$TMP/bd" "$TMP/tree/runs/base-data"
sed "s|^steps = .*|steps = 1|" "$SRC/configs/base.ini" >"$TMP/tree/configs/base.ini"
(cd "$TMP/tree" && "$SPADE" pretrain configs/base.ini) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -f "$TMP/tree/runs/base/policy.ckpt" ]; then ok "configs/base.ini pretrains (one step) on the data script's runs/base-data"
else bad "configs/base.ini pretrains (one step) on the data script's runs/base-data"; fi
mkdir -p base && cp "$TMP/tree/runs/base/policy.ckpt" base/policy.ckpt
# configs/base-designer.ini (docs/train.md) at toy size: its data (the script
# with whole-source designer prompts, copied twice), one step of batch 1
(cd "$SRC" && POOL_EPISODES=2 SWEEP_EPISODES=1 DESIGNER=1 PROMPT_BUDGET=4096 DESIGNER_COPIES=2 configs/base-data.sh "$TMP/bdd" "$SPADE") >"$TMP/out" 2>&1
if [ $? -eq 0 ] && cmp -s bdd/designer/nim.designer.transcript bdd/designer-copy2/nim.designer.transcript && [ ! -d bdd/designer-copy3 ] &&
    grep -q '^PARAM' bdd/designer/nim.designer.transcript && [ "$(grep -c '^ENV(' bdd/designer/nim.designer.transcript)" -eq 2 ] &&
    ! grep -q '^\.\.\.$' bdd/designer/nim.designer.transcript; then
    ok "configs/base-data.sh with PROMPT_BUDGET and DESIGNER_COPIES: whole-source designer prompts, copied"
else bad "configs/base-data.sh with PROMPT_BUDGET and DESIGNER_COPIES: whole-source designer prompts, copied"; fi
sed "s|^data = .*|data = $TMP/bdd|; s|^out = .*|out = $TMP/based|; s|^steps = .*|steps = 1|; s|^batch = .*|batch = 1|" "$SRC/configs/base-designer.ini" >base-designer.ini
"$SPADE" pretrain base-designer.ini >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -f based/policy.ckpt ] && grep -q '"vocab":4096' based/pretrain.jsonl; then
    ok "configs/base-designer.ini pretrains (one step)"
else bad "configs/base-designer.ini pretrains (one step)"; fi
sed "s|^dir = .*|dir = $TMP/bt|; s|^init = .*|init = $TMP/base/policy.ckpt|; s|^iterations = .*|iterations = 1|; s|^envs = 10|envs = 2|; s|^plays = .*|plays = 2|" \
    "$SRC/configs/base-train.ini" >base-train.ini
"$SPADE" train base-train.ini >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <bt/train.jsonl)" -eq 1 ] && grep -q '"carry_add:digits=1"\|"per_env"' bt/train.jsonl; then
    ok "configs/base-train.ini trains from the base checkpoint (one iteration)"
else bad "configs/base-train.ini trains from the base checkpoint (one iteration)"; fi
# configs/base-curriculum.ini at the same toy size: the curriculum over `level` holds exactly the
# pool's three environments that have it (sequence, odd_one, analogy: entries 1, 6, 7)
sed "s|^dir = .*|dir = $TMP/bc|; s|^init = .*|init = $TMP/base/policy.ckpt|; s|^iterations = .*|iterations = 1|; s|^envs = 10|envs = 2|; s|^plays = .*|plays = 2|" \
    "$SRC/configs/base-curriculum.ini" >base-curriculum.ini
"$SPADE" train base-curriculum.ini >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <bc/train.jsonl)" -eq 1 ] && [ "$(grep '^curriculum ' bc/state | cut -d' ' -f2 | tr '\n' ' ')" = "1 6 7 " ]; then
    ok "configs/base-curriculum.ini trains with the curriculum over sequence, odd_one and analogy (one iteration)"
else bad "configs/base-curriculum.ini trains with the curriculum over sequence, odd_one and analogy (one iteration)"; fi
# docs/train.md's measurements, on the toy checkpoint: the pool eval with the
# hint, the held-out eval, and the designer bench
pool=$(grep -v '^#' "$SRC/configs/base-pool.txt" | head -2)
# shellcheck disable=SC2086
"$SPADE" eval bt/policy-0.ckpt $pool --episodes 2 --hint --seed 100000 >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "with hint" "$TMP/out"; then ok "the pool eval with the hint runs"; else bad "the pool eval with the hint runs"; fi
"$SPADE" eval bt/policy-0.ckpt --suite heldout --episodes 1 --seed 100000 >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "mean over 1[0-9] environments" "$TMP/out"; then ok "the held-out eval runs"; else bad "the held-out eval runs"; fi
BENCH=$(dirname "$SPADE")/bench/bench_designer_base
if [ -x "$BENCH" ]; then
    "$BENCH" base/policy.ckpt --samples 1 --envs 1 >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q "1 samples from 1 prompts" "$TMP/out"; then ok "bench_designer_base runs"; else bad "bench_designer_base runs"; fi
else echo "ok - # SKIP bench_designer_base not built"; fi

# The designer's warm start (docs/train.md): --pairs answers each source with
# the other sources of its family, --rewrite states the change, --hold-out
# drops whole families; with --model the turns are the model's ChatML.
TINY=$(dirname "$SPADE")/tests/make_tiny_gguf
if [ -x "$TINY" ] && "$TINY" llama "$TMP/tiny.gguf" 5 >/dev/null 2>&1; then
    "$SPADE" demos nim hanoi latin carry_add modpow --episodes 0 --pairs --rewrite 1 --hold-out math --model "$TMP/tiny.gguf" \
        --prompt-budget 8000 --out w >"$TMP/out" 2>&1
    rc=$?
    # logic holds nim, hanoi, latin: each pairs file holds the two others as answers, whole, in ```c blocks
    if [ $rc -eq 0 ] && [ "$(grep -c '^<|im_start|>assistant$' w/nim.pairs.transcript)" -eq 2 ] &&
        grep -q 'ENV("hanoi"' w/nim.pairs.transcript && grep -q 'ENV("latin"' w/nim.pairs.transcript &&
        [ "$(grep -c '^Write one new environment of the family logic' w/nim.pairs.transcript)" -eq 2 ] &&
        [ "$(grep -c '^<|im_start|>system$' w/nim.pairs.transcript)" -eq 2 ] && grep -q '^```c$' w/nim.pairs.transcript &&
        grep -q '^A document to draw on (nim.c):$' w/nim.pairs.transcript; then
        ok "--pairs: each source grounds the chat-form request, the family's other sources answer it"
    else bad "--pairs: each source grounds the chat-form request, the family's other sources answer it (rc $rc)"; fi
    if [ $rc -eq 0 ] && [ ! -e w/carry_add.pairs.transcript ] && [ ! -e w/modpow.rewrite.transcript ] &&
        ! grep -q 'ENV("carry_add"\|ENV("modpow"\|^Family: math' w/*.pairs.transcript w/*.rewrite.transcript &&
        grep -q "held out: carry_add (family math)" "$TMP/out" && grep -q "held out: modpow (family math)" "$TMP/out"; then
        ok "--hold-out math: no math environment in any file, as grounding or as answer"
    else bad "--hold-out math: no math environment in any file, as grounding or as answer"; fi
    name=$(sed -n 's/.*Name it \([a-z_]*\)\..*/\1/p' w/nim.rewrite.transcript)
    if [ $rc -eq 0 ] && [ -n "$name" ] && grep -q "^Rewrite the environment shown with this change: Name it $name\." w/nim.rewrite.transcript &&
        grep -q "^ENV(\"$name\"" w/nim.rewrite.transcript; then
        ok "--rewrite: the request states the change and the answer makes it ($name)"
    else bad "--rewrite: the request states the change and the answer makes it ('$name')"; fi
    "$SPADE" demos carry_add --episodes 0 --pairs --hold-out math --out w2 >"$TMP/out" 2>&1
    if [ $? -eq 1 ] && grep -q "every environment named is held out" "$TMP/out"; then ok "holding out everything is an error"
    else bad "holding out everything is an error"; fi
    # spade pretrain fine-tunes the model on the answers only: the transcripts' answer tokens are counted
    cat >ws.ini <<EOF2
[policy]
model = $TMP/tiny.gguf
context = 512
[pretrain]
data = a-tiny
out = ws
loss = answers
steps = 2
batch = 2
lr = 1e-4
warmup = 0
sample_every = 0
EOF2
    "$SPADE" demos nim --episodes 4 --model "$TMP/tiny.gguf" --out a-tiny >/dev/null 2>&1
    "$SPADE" pretrain ws.ini >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && [ -f ws/policy.ckpt ] && grep -q '"answer_tokens":[1-9]' ws/pretrain.jsonl && grep -q '"tokenizer":"gguf"' ws/pretrain.jsonl; then
        ok "spade pretrain with [policy] model and loss = answers fine-tunes the model"
    else bad "spade pretrain with [policy] model and loss = answers fine-tunes the model"; fi
    "$SPADE" pretrain ws.ini >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q "resuming at step 2 of 2" "$TMP/out"; then ok "... and resumes from its checkpoint"
    else bad "... and resumes from its checkpoint"; fi
    sed 's/^context = 512/context = 64/' ws.ini | sed 's|^out = ws|out = ws64|' >ws64.ini
    "$SPADE" demos nim hanoi --episodes 0 --pairs --model "$TMP/tiny.gguf" --prompt-budget 8000 --out a-tiny >/dev/null 2>&1
    rm -f a-tiny/nim.transcript
    "$SPADE" pretrain ws64.ini >"$TMP/out" 2>&1
    if [ $? -eq 1 ] && grep -q "no answer token in the step's windows" "$TMP/out"; then ok "windows shorter than the prompts are refused"
    else bad "windows shorter than the prompts are refused"; fi
    # The recipe at toy size (docs/train.md, "A warm start for the designer"): its data script with the
    # tiny model's template, then one step of each config on the tiny model
    (cd "$SRC" && MODEL="$TMP/tiny.gguf" PROMPT_BUDGET=8000 configs/warmstart-data.sh "$TMP/wsd" "$SPADE") >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && [ -s wsd/nim.pairs.transcript ] && [ -s wsd/nim.rewrite.transcript ] && [ ! -e wsd/modpow.pairs.transcript ] &&
        [ ! -e wsd/recall.pairs.transcript ] && [ "$(ls wsd/*.pairs.transcript | wc -l)" -eq 32 ]; then
        ok "configs/warmstart-data.sh writes pairs and rewrites of the 32 sources outside math and memory"
    else bad "configs/warmstart-data.sh writes pairs and rewrites of the 32 sources outside math and memory"; fi
    "$SPADE" demos nim --episodes 4 --model "$TMP/tiny.gguf" --out a-tiny2 >/dev/null 2>&1
    for cfg in warmstart-smollm2 warmstart-qwen; do
        sed "s|^model = .*|model = $TMP/tiny.gguf|; s|^context = .*|context = 512|; s|^data = .*|data = $TMP/a-tiny2|; s|^out = .*|out = $TMP/$cfg|; s|^steps = .*|steps = 1|" \
            "$SRC/configs/$cfg.ini" >$cfg.ini
        "$SPADE" pretrain $cfg.ini >"$TMP/out" 2>&1
        if [ $? -eq 0 ] && [ -f $cfg/policy.ckpt ] && grep -q '"answer_tokens":[1-9]' $cfg/pretrain.jsonl; then
            ok "configs/$cfg.ini fine-tunes on the answers (one step, the tiny model in its place)"
        else bad "configs/$cfg.ini fine-tunes on the answers (one step, the tiny model in its place)"; fi
    done
    # The agent's warm start (docs/train.md, "A warm start for the agent") at toy size: the data script
    # (2 episodes of each of its 14 environments, the second in the hint arm), one step of the config
    # on it, and the held-out and held-in evals of the result as the docs run them
    (cd "$SRC" && MODEL="$TMP/tiny.gguf" EPISODES=2 configs/warmstart-agent-data.sh "$TMP/wsa" "$SPADE") >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && [ "$(ls wsa/*.transcript | wc -l)" -eq 14 ] && [ -s wsa/carry_add.transcript ] && [ -s wsa/tour.transcript ] &&
        [ "$(cat wsa/*.transcript | grep -c '^<|im_start|>assistant$')" -ge 28 ] &&
        [ "$(cat wsa/*.transcript | grep -c '^Hint: ')" -eq 14 ]; then
        ok "configs/warmstart-agent-data.sh writes SOLVE's episodes of its 14 stdenv environments, every second with the hint"
    else bad "configs/warmstart-agent-data.sh writes SOLVE's episodes of its 14 stdenv environments, every second with the hint"; fi
    leak=""
    for f in "$SRC"/eval/heldout/*.c; do
        h=$(sed -n 's/.*HINT *{ *say("\(.\{30\}\).*/\1/p' "$f")
        if [ -z "$h" ] || grep -qF "$h" wsa/*.transcript; then leak="$leak $(basename "$f")"; fi
    done
    if [ -z "$leak" ] && ! grep -q 'base_convert\|clock_add\|rpn_eval\|run_length\|robot_program' wsa/*.transcript; then
        ok "... and no held-out environment's hint or name is in the data"
    else bad "... and no held-out environment's hint or name is in the data (found:$leak)"; fi
    (cd "$SRC" && ENVS="carry_add base_convert" MODEL="$TMP/tiny.gguf" EPISODES=1 configs/warmstart-agent-data.sh "$TMP/wsa2" "$SPADE") >"$TMP/out" 2>&1
    if [ $? -eq 1 ] && grep -q "base_convert is not a stdenv environment" "$TMP/out" && [ ! -e wsa2 ]; then
        ok "... and a held-out environment in ENVS is refused"
    else bad "... and a held-out environment in ENVS is refused"; fi
    sed "s|^model = .*|model = $TMP/tiny.gguf|; s|^context = .*|context = 512|; s|^data = .*|data = $TMP/wsa|; s|^out = .*|out = $TMP/wsa-ckpt|; s|^steps = .*|steps = 1|" \
        "$SRC/configs/warmstart-agent-smollm2.ini" >wsa.ini
    "$SPADE" pretrain wsa.ini >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && [ -f wsa-ckpt/policy.ckpt ] && grep -q '"answer_tokens":[1-9][0-9]*,"transcripts":28' wsa-ckpt/pretrain.jsonl; then
        ok "configs/warmstart-agent-smollm2.ini fine-tunes on the agent's actions of the 28 transcripts (one step, the tiny model)"
    else bad "configs/warmstart-agent-smollm2.ini fine-tunes on the agent's actions of the 28 transcripts (one step, the tiny model)"; fi
    (cd "$SRC" && "$SPADE" eval "$TMP/wsa-ckpt/policy.ckpt" eval/heldout/base_convert.c stdenv/carry_add.c --episodes 1 --hint --seed 0 \
        --reasoning-tokens 0 --action-tokens 4 --no-reference --jsonl "$TMP/wsa-eval.jsonl") >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q "paired seeds: " "$TMP/out" && [ "$(grep -c '"env"' wsa-eval.jsonl)" -ge 2 ]; then
        ok "... and spade eval plays a held-out and a held-in environment with the warm-started checkpoint, with and without the hint"
    else bad "... and spade eval plays a held-out and a held-in environment with the warm-started checkpoint, with and without the hint"; fi
else echo "ok - # SKIP tests/make_tiny_gguf not built"; fi

# The measurement (bench/bench_designer_chat): the grounding copied as the answer compiles and checks
# and is refused by novelty; as the rewrite, the variant asked for is exact and passes every gate;
# saved answers are judged again; a checkpoint samples N = prompts x K answers.
BENCH=$(dirname "$SPADE")/bench/bench_designer_chat
if [ -x "$BENCH" ]; then
    "$BENCH" --copy --families math >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q '^| all | - | 4/4 \[0.510, 1.000\] | 4/4 \[0.510, 1.000\] | 4/4 \[0.510, 1.000\] | 0/4 \[0.000, 0.490\] | 0/4 \[0.000, 0.490\] |' "$TMP/out" &&
        grep -q "first failed gate: novelty 4" "$TMP/out"; then
        ok "bench_designer_chat: a copy of the prompt's source compiles and checks, and fails novelty"
    else bad "bench_designer_chat: a copy of the prompt's source compiles and checks, and fails novelty"; fi
    "$BENCH" --copy --rewrite --families math >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q '^| all | - | 4/4 .* | 4/4 .* | 4/4 .* | 4/4 .* | 4/4 \[0.510, 1.000\] |' "$TMP/out"; then
        ok "bench_designer_chat --rewrite: the variant asked for is exact and passes every gate"
    else bad "bench_designer_chat --rewrite: the variant asked for is exact and passes every gate"; fi
    mkdir -p saved && { printf 'Here it is:\n```c\n'; cat "$SRC/stdenv/modpow.c"; printf '```\n'; } >saved/modpow-0.txt &&
        printf 'int main(void) { return 0; }\n' >saved/modpow-1.txt
    "$BENCH" --judge saved --families math --samples 2 >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q '^| modpow.c | math | 1/2 [^|]* | 1/2 [^|]* | 1/2 [^|]* | 0/2 [^|]* | 0/2 ' "$TMP/out" && grep -q "N = 2 " "$TMP/out"; then
        ok "bench_designer_chat --judge: saved answers are judged from their first \`\`\`c block"
    else bad "bench_designer_chat --judge: saved answers are judged from their first \`\`\`c block"; fi
    "$BENCH" base/policy.ckpt --families logic --samples 2 --budget 440 --max-tokens 16 --save smp >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && grep -q "N = 8 (4 prompts x 2)" "$TMP/out" && grep -q '^| all | - | [0-8]/8 ' "$TMP/out" && [ -s smp/nim-1.txt ]; then
        ok "bench_designer_chat samples and judges N = prompts x K answers of a checkpoint"
    else bad "bench_designer_chat samples and judges N = prompts x K answers of a checkpoint"; fi
else echo "ok - # SKIP bench_designer_chat not built"; fi

[ $fails -eq 0 ]
