#!/bin/sh
# test_chat.sh — a pretrained model plays in its chat template, end to end, as
# a person runs it: `spade eval MODEL` on one held-out environment with and
# without a reasoning budget (and the hint arm, with its paired seeds and the
# tokens each arm wrote), `spade run --agent
# policy:MODEL --transcripts F` writing the ChatML it read and wrote (the
# agent's system line, the budget, <|im_start|>assistant turns, none of
# spade's role tokens), `spade demos --model` rendering both roles' turns in
# ChatML, the designer card's example passing spade check, and
# configs/compare-arms-smollm2.sh's two arms at toy size. The errors
# need no model; the rest skips, saying so, without SmolLM2 (./bootstrap
# fetches it).
# Not the token layout and mask (tests/test_chat.c checks them on a tiny model
# it writes), nor how well the model plays.
NAME=chat
. "${srcdir:-.}/tests/tap.sh"
export SPADE_PATH="$SRC/stdenv"
cd "$TMP" || exit 99
HL="$SRC/eval/heldout/clock_add.c"

# the card's example is an environment that passes spade check (docs/dsl.md, "The DSL in brief")
sed -n '/^<!-- designer-card begin/,/^<!-- designer-card end/p' "$SRC/docs/dsl.md" | sed -n '/^```c$/,/^```$/p' |
    sed '1d;$d' >card_add.c
"$SPADE" check card_add.c >"$TMP/out" 2>&1 && ok "the designer card's example passes spade check" ||
    bad "the designer card's example passes spade check"
# ... and follows the card's own rule: two or more PARAMs
[ "$(grep -c '^PARAM(' card_add.c)" -ge 2 ] && ok "the designer card's example has two or more PARAMs, as its rules ask" ||
    bad "the designer card's example has two or more PARAMs, as its rules ask"

"$SPADE" run "$HL" --transcripts t.txt >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -q "for --agent policy" "$TMP/out" && ok "--transcripts without a policy agent is a usage error" ||
    bad "--transcripts without a policy agent is a usage error"
"$SPADE" eval none "$HL" --reasoning-tokens -1 >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -q -- "--reasoning-tokens" "$TMP/out" && ok "a negative reasoning budget is refused" ||
    bad "a negative reasoning budget is refused"

MODEL=${SPADE_MODELS:-$HOME/.cache/spade/models}/smollm2-135m-instruct.gguf
if [ ! -f "$MODEL" ]; then
    echo "ok 5 - the pretrained model in its chat template # SKIP needs $MODEL (./bootstrap, or spade model fetch smollm2-135m-instruct)"
    echo "1..5"
    [ "$fails" -eq 0 ]
    exit
fi

"$SPADE" eval smollm2-135m-instruct "$HL" -n 1 --hint --greedy --no-reference --context 512 --jsonl e0.jsonl \
    >"$TMP/out" 2>&1
[ $? -eq 0 ] && grep -q '"policy":{"n":1,' e0.jsonl && grep -q '"hint":{"n":1,' e0.jsonl &&
    ok "spade eval MODEL plays a held-out environment, both arms" || bad "spade eval MODEL plays a held-out environment, both arms"
# ... with what each arm wrote and the hint arm's pairs (one seed: at most one of them won alone)
grep -q '"hint_only":[01],"policy_only":[01]' e0.jsonl && grep -q '"hint":{[^}]*"turns":[1-9]' e0.jsonl &&
    grep -q '^paired seeds: [01] won only with the hint, [01] only without$' "$TMP/out" &&
    grep -q '^policy + hint wrote [0-9.]* tokens in [0-9.]* turns an episode' "$TMP/out" &&
    ok "spade eval --hint reports the tokens written and the paired seeds" ||
    bad "spade eval --hint reports the tokens written and the paired seeds"
"$SPADE" eval "$MODEL" "$HL" -n 1 --greedy --no-reference --context 512 --reasoning-tokens 16 --jsonl e1.jsonl \
    >"$TMP/out" 2>&1
[ $? -eq 0 ] && grep -q '"policy":{"n":1,' e1.jsonl && ok "spade eval PATH.gguf --reasoning-tokens 16 plays it too" ||
    bad "spade eval PATH.gguf --reasoning-tokens 16 plays it too"

"$SPADE" run "$HL" --agent policy:smollm2-135m-instruct -n 1 --reasoning-tokens 16 --transcripts t.txt \
    >"$TMP/out" 2>&1
rc=$?
cp t.txt "$TMP/out" 2>/dev/null
if [ $rc -eq 0 ] && head -c 19 t.txt | grep -q '^<|im_start|>system$' && grep -q 'in at most 16 tokens' t.txt &&
    grep -q '^<|im_start|>user$' t.txt && grep -q '^<|im_start|>assistant$' t.txt && ! grep -q '<|agent|>\|<|action|>' t.txt; then
    ok "spade run --agent policy:MODEL --transcripts writes ChatML with the reasoning budget"
else bad "spade run --agent policy:MODEL --transcripts writes ChatML with the reasoning budget"; fi

"$SPADE" demos carry_add:digits=1 --episodes 2 --hint --designer 1 --model smollm2-135m-instruct --out d >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '^<|im_start|>system$' d/carry_add.transcript && grep -q '^Hint: ' d/carry_add.transcript &&
    grep -q '^You design environments for spade' d/carry_add.designer.transcript &&
    grep -q '^<|im_start|>assistant$' d/carry_add.designer.transcript && grep -q '^```c$' d/carry_add.designer.transcript &&
    ! grep -q '<|designer|>' d/carry_add.designer.transcript; then
    ok "spade demos --model renders both roles in ChatML"
else bad "spade demos --model renders both roles in ChatML"; fi
# configs/compare-arms-smollm2.sh (docs/selfplay.md's SmolLM2 comparison) at toy size: one seed, one
# iteration of 2 fillings and 2 plays an arm. Both arms fill the same holes at iteration 0 (one run seed,
# nothing trained before it), the frozen one logs no designer sample, LR=X is the update's lr, and the
# command it prints runs.
ENVS=2 PLAYS=2 LR=3e-5 sh "$SRC/configs/compare-arms-smollm2.sh" 1 1 arms "$SPADE" >"$TMP/cmp" 2>&1
rc=$?
cp "$TMP/cmp" "$TMP/out"
"$SPADE" archive list arms/trained-1 >at.txt 2>&1 && "$SPADE" archive list arms/frozen-1 >af.txt 2>&1
if [ $rc -eq 0 ] && grep -q '^model = smollm2-135m-instruct$' arms/trained-1.ini && grep -q '^train = true$' arms/trained-1.ini && grep -q '^lr = 3e-5$' arms/trained-1.ini &&
    grep -q '^train = false$' arms/frozen-1.ini && grep -q '^source = template$' arms/frozen-1.ini &&
    [ "$(grep -c ' 0  logic ' at.txt)" -eq 2 ] && cmp -s at.txt af.txt &&
    grep -q '"designer_samples":0,' arms/frozen-1/train.jsonl &&
    (sh -c "$(sed -n 's/^  //p' "$TMP/cmp")" >"$TMP/out" 2>&1) && [ -s arms/report/compare.md ]; then
    ok "configs/compare-arms-smollm2.sh runs a trained and a frozen SmolLM2 arm on one seed, and its compare command runs"
else bad "configs/compare-arms-smollm2.sh runs a trained and a frozen SmolLM2 arm on one seed, and its compare command runs"; fi
echo "1..$n"
[ "$fails" -eq 0 ]
