#!/bin/sh
# warmstart-data.sh — the designer's warm-start demonstrations of
# configs/warmstart-smollm2.ini in DIR (default runs/warmstart-data): every
# stdenv source as the grounding of the self-play loop's chat-form designer
# request, answered by each other source of its family (spade demos --pairs),
# and REWRITE checked variants of it as the rewrite task, the change stated in
# the request (--rewrite); the families in HOLD_OUT (default math,memory) are
# left out of every file, so the measurement on their prompts (docs/train.md,
# "A warm start for the designer") asks for what training never showed.
# Rendered in MODEL's chat template (default smollm2-135m-instruct), prompts
# within PROMPT_BUDGET of its tokens (1800: the card, the request and a whole
# excerpt of up to ~2.5 KB of source). Deterministic.
# Usage: configs/warmstart-data.sh [DIR] [SPADE]   (run from the source tree)
# Not the fine-tuning itself: spade pretrain configs/warmstart-smollm2.ini reads DIR.
set -e
DIR=${1:-runs/warmstart-data}
SPADE=${2:-./spade}
MODEL=${MODEL:-smollm2-135m-instruct}
HOLD_OUT=${HOLD_OUT:-math,memory}
PROMPT_BUDGET=${PROMPT_BUDGET:-1800}
REWRITE=${REWRITE:-1}
rm -rf "$DIR"
# shellcheck disable=SC2046
"$SPADE" demos $(for f in stdenv/*.c; do basename "$f" .c; done) --episodes 0 --pairs --rewrite "$REWRITE" \
    --hold-out "$HOLD_OUT" --model "$MODEL" --prompt-budget "$PROMPT_BUDGET" --out "$DIR"
