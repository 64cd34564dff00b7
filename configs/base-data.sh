#!/bin/sh
# base-data.sh — builds the pretraining data of configs/base.ini in DIR
# (default runs/base-data): the stdenv sources, SOLVE's demonstrations on the
# easy pool (configs/base-pool.txt, half of them with the hint), SOLVE on every
# stdenv environment across its parameters, and checked source variants as
# designer demonstrations. Deterministic: the same tree gives the same files.
# Usage: configs/base-data.sh [DIR] [SPADE]   (run from the source tree)
# PROMPT_BUDGET (designer prompt bytes, default 1024) and DESIGNER_COPIES
# (how many times the designer demonstrations appear, default 1) make the data
# of configs/base-designer.ini: PROMPT_BUDGET=4096 DESIGNER_COPIES=3.
# Not the pretraining itself: spade pretrain configs/base.ini reads DIR.
set -e
DIR=${1:-runs/base-data}
SPADE=${2:-./spade}
POOL_EPISODES=${POOL_EPISODES:-300}
SWEEP_EPISODES=${SWEEP_EPISODES:-16}
DESIGNER=${DESIGNER:-4}
PROMPT_BUDGET=${PROMPT_BUDGET:-1024}
DESIGNER_COPIES=${DESIGNER_COPIES:-1}
here=$(dirname "$0")
rm -rf "$DIR"
mkdir -p "$DIR/stdenv"
cp stdenv/*.c "$DIR/stdenv/"
pool=$(grep -v '^#' "$here/base-pool.txt")
# shellcheck disable=SC2086
"$SPADE" demos $pool --episodes "$POOL_EPISODES" --hint --out "$DIR/pool"
# The grid worlds' episodes are long (a maze at its max size is ~40 KB of
# transcript): they get their defaults only, so they do not drown the rest.
big="maze fog_maze key_door"
all=$(for f in stdenv/*.c; do basename "$f" .c; done)
sweep=$(for e in $all; do case " $big " in *" $e "*) ;; *) echo "$e" ;; esac; done)
# shellcheck disable=SC2086
"$SPADE" demos $sweep --episodes "$SWEEP_EPISODES" --params-sweep --hint --seed 1000 --out "$DIR/sweep"
# shellcheck disable=SC2086
"$SPADE" demos $big --episodes 8 --hint --seed 1000 --out "$DIR/big"
# shellcheck disable=SC2086
[ "$DESIGNER" -gt 0 ] && "$SPADE" demos $all --episodes 0 --designer "$DESIGNER" --seed 7 --prompt-budget "$PROMPT_BUDGET" --out "$DIR/designer"
# Oversampling by copies: spade pretrain samples windows uniformly over its
# files, so a second copy doubles the designer demonstrations' share.
i=2
while [ "$DESIGNER" -gt 0 ] && [ "$i" -le "$DESIGNER_COPIES" ]; do
    cp -r "$DIR/designer" "$DIR/designer-copy$i"
    i=$((i + 1))
done
true
