#!/bin/sh
# compare-arms.sh — the trained-against-frozen designer comparison of issue 17
# at toy size, in seconds: for each seed 1..SEEDS, two self-play runs of the
# template designer (templates/cups.c, a 1-layer policy from scratch), the
# same config and seed in both arms, one with the designer trained and one with
# [designer] train = false (equal compute but the designer's share of the
# update), in DIR/trained-S and DIR/frozen-S (each config beside its run; a
# config's [run] dir is relative to it); then the command that compares
# them. Not a measurement of a pretrained model (docs/selfplay.md has those),
# and not the comparison itself: spade report --compare reads the runs.
# Usage: configs/compare-arms.sh [ITERATIONS] [SEEDS] [DIR] [SPADE]   (from the source tree)
set -e
ITERATIONS=${1:-30}
SEEDS=${2:-3}
DIR=${3:-runs/arms}
SPADE=${4:-./spade}
TEMPLATE=$(cd -P "$(dirname "$0")/../templates" && pwd)/cups.c
mkdir -p "$DIR"
trained= frozen=
for s in $(seq 1 "$SEEDS"); do
    for arm in trained frozen; do
        train=true
        [ $arm = frozen ] && train=false
        cat >"$DIR/$arm-$s.ini" <<EOF2
[run]
dir = $arm-$s
iterations = $ITERATIONS
seed = $s
[policy]
layers = 1
heads = 2
width = 32
context = 1536
[designer]
enabled = true
train = $train
envs = 4
source = template
template = $TEMPLATE
hole_tokens = 6
max_step_ms = 200
gate_seeds = 10
[selfplay]
plays = 4
[agent]
max_action_tokens = 6
EOF2
        "$SPADE" train "$DIR/$arm-$s.ini" >"$DIR/$arm-$s.log" 2>&1 || { cat "$DIR/$arm-$s.log" >&2; exit 1; }
    done
    trained="$trained${trained:+,}$DIR/trained-$s" frozen="$frozen${frozen:+,}$DIR/frozen-$s"
done
echo "compare-arms: $SEEDS seeds x 2 arms x $ITERATIONS iterations in $DIR; compare them with"
echo "  $SPADE report --compare trained=$trained frozen=$frozen --out $DIR/report"
