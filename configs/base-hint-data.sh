#!/bin/sh
# base-hint-data.sh — builds the pretraining data of configs/base-hint.ini in
# DIR (default runs/base-hint-data): the stdenv sources (the embedded
# default's base data) plus SOLVE's won episodes of templates/cups.c filled
# with cups 2..MAX_CUPS and tries = ceil(cups/2) (exactly the hint's half,
# where the hint decides the game) and ceil(cups/2) + 2, every second
# episode with the hint. A probe of a "hint-literate" agent for the template
# designer (docs/selfplay.md), not a general base: it has seen SOLVE play
# this template's own games. The no-hint episodes are SOLVE's too, so they
# walk the ball's parity without being told it: the policy can only learn to
# pick a parity at random there. Deterministic: the same tree gives the same
# files. Not the pretraining itself: spade pretrain configs/base-hint.ini.
# STDENV_COPIES (default 2) copies of the stdenv sources make them about half
# of the tokens: with one copy the cups games are ~80% and the base, though it
# reads the hint, fills the template's holes with text that rarely compiles
# (docs/selfplay.md has both).
# Usage: configs/base-hint-data.sh [DIR] [SPADE]   (run from the source tree)
set -e
DIR=${1:-runs/base-hint-data}
SPADE=${2:-./spade}
EPISODES=${EPISODES:-16}
MAX_CUPS=${MAX_CUPS:-30}
STDENV_COPIES=${STDENV_COPIES:-2}
rm -rf "$DIR"
mkdir -p "$DIR/stdenv" "$DIR/filled" "$DIR/cups"
cp stdenv/*.c "$DIR/stdenv/"
i=2
while [ "$i" -le "$STDENV_COPIES" ]; do
    mkdir -p "$DIR/stdenv-copy$i"
    cp stdenv/*.c "$DIR/stdenv-copy$i/"
    i=$((i + 1))
done
n=2
while [ "$n" -le "$MAX_CUPS" ]; do
    half=$(((n + 1) / 2))
    for t in "$half" $((half + 2)); do
        f="$DIR/filled/cups-$n-$t.c"
        "$(dirname "$0")/cups-fill.sh" "$n" "$t" "$f"
        # Only fillings that pass `spade check`: from about 26 cups a random
        # agent's guesses hit the ball often enough to fail random_agent.
        if "$SPADE" check "$f" >/dev/null; then
            # Every transcript is named after its ENV ("cups"): one folder each.
            "$SPADE" demos "$f" --episodes "$EPISODES" --hint --seed "$n" --out "$DIR/cups/$n-$t" >/dev/null
        else
            echo "base-hint-data.sh: cups $n tries $t fails spade check: left out"
        fi
    done
    n=$((n + 1))
done
# The filled sources are not pretraining data (the designer's fillings would
# then be copied, not learnt): only the transcripts stay.
rm -rf "$DIR/filled"
