#!/bin/sh
# warmstart-agent-data.sh — the agent's warm-start demonstrations of
# configs/warmstart-agent-smollm2.ini in DIR (default runs/warmstart-agent-data):
# SOLVE's won episodes of stdenv environments as agent transcripts (spade demos),
# in MODEL's chat template (default smollm2-135m-instruct), the observation as
# the user turn and SOLVE's action as the assistant turn, the hint as a second
# system line on every second episode (--hint), EPISODES seeds an environment
# from seed 0 (default 32) cycling through 8 param settings (--params-sweep).
# The environments (ENVS) are the stdenv ones whose SOLVE episodes are short:
# under 1 KB on average over the sweep (about 300 tokens, 1-5.5 actions), so a
# 512-token window holds a whole transcript and the answers are what the
# agent writes at R = 0 (the action is the whole answer: a number, a word, a
# \boxed{} list, a tool call). Only stdenv/ is searched (SPADE_PATH), and a
# name that is not a stdenv file is refused here, before DIR is touched; the
# held-out guard itself is spade demos's (core/heldout.h: a file in a HELDOUT
# directory or a copy of a held-out file anywhere is exit 1), so eval/heldout
# never reaches the data (tests/test_demos.sh checks that no held-out
# environment's hint appears in any file). Deterministic.
# Usage: configs/warmstart-agent-data.sh [DIR] [SPADE]   (run from the source tree)
# Not the fine-tuning itself: spade pretrain configs/warmstart-agent-smollm2.ini reads DIR.
set -e
DIR=${1:-runs/warmstart-agent-data}
SPADE=${2:-./spade}
MODEL=${MODEL:-smollm2-135m-instruct}
EPISODES=${EPISODES:-32}
ENVS=${ENVS:-sequence modpow linear carry_add latin liars odd_one analogy ranking clues recall weighing change tour}
for e in $ENVS; do
    [ -f "stdenv/$e.c" ] || { echo "warmstart-agent-data.sh: $e is not a stdenv environment" >&2; exit 1; }
done
rm -rf "$DIR"
# shellcheck disable=SC2086
SPADE_PATH=stdenv "$SPADE" demos $ENVS --episodes "$EPISODES" --params-sweep --hint --model "$MODEL" --out "$DIR"
