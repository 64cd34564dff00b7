#!/bin/sh
# compare-arms.sh — the trained-against-frozen designer comparison of issue 17:
# for each seed 1..SEEDS, two self-play runs of the template designer
# (templates/cups.c), the same config and seed in both arms, one with the
# designer trained and one with [designer] train = false (equal compute but the
# designer's share of the update), in DIR/trained-S and DIR/frozen-S (each
# config beside its run; a config's [run] dir is relative to it), seed 1's
# pair first, then seed 2's, so both arms see the same load; then the command
# that compares them. A run already in DIR is run on to ITERATIONS (its
# config.ini's [run] iterations raised, then resumed), if its config is the one
# this call would write but for the iterations; another config there is
# refused. SEED_LIST="1 3" runs those seeds, ARMS=frozen one arm, so that
# two calls can share the seeds between two cores. With MODEL unset, a
# 1-layer policy from scratch: a toy, in seconds. With MODEL set to a pretrained chat model (what
# configs/compare-arms-smollm2.sh does), it is the one policy at the embedded
# default's knobs for it (cli/cmd_train.c, DEFAULT_PRETRAINED: LoRA rank 8,
# q4_1 sampling weights, temperature 0.7, 4 plays an arm, 16-token actions,
# lr 1e-5) with 8-token holes and ENVS fillings an iteration (8, as
# configs/default-template.ini). Not the comparison itself: spade report
# --compare reads the runs.
# Usage: [MODEL=NAME] [ENVS=N] [PLAYS=N] [LR=X, with MODEL: the update's lr, 1e-5] [SEED_LIST="S ..."] [ARMS="trained frozen"] configs/compare-arms.sh [ITERATIONS] [SEEDS] [DIR] [SPADE]   (from the source tree)
set -e
ITERATIONS=${1:-30}
SEEDS=${2:-3}
DIR=${3:-runs/arms}
SPADE=${4:-./spade}
TEMPLATE=$(cd -P "$(dirname "$0")/../templates" && pwd)/cups.c
STDENV=$(cd -P "$(dirname "$0")/../stdenv" && pwd)
if [ -z "${MODEL:-}" ]; then # the toy: a policy from scratch
    POLICY='layers = 1
heads = 2
width = 32
context = 1536'
    DESIGNER="envs = ${ENVS:-4}
hole_tokens = 6
max_step_ms = 200
gate_seeds = 10"
    REST="[selfplay]
plays = ${PLAYS:-4}
[agent]
max_action_tokens = 6"
else # a pretrained chat model at the embedded default's knobs
    POLICY="model = $MODEL
context = 2048
lora_rank = 8
sample_weights = q4_1"
    DESIGNER="envs = ${ENVS:-8}
hole_tokens = 8
temperature = 0.7
max_step_ms = 50"
    REST="[selfplay]
plays = ${PLAYS:-4}
pool_envs = 0
[pool]
dirs = $STDENV
[agent]
plays = ${PLAYS:-4}
max_action_tokens = 16
[grpo]
lr = ${LR:-1e-5}
micro_batch = 1"
fi
mkdir -p "$DIR"
trained= frozen=
for s in ${SEED_LIST:-$(seq 1 "$SEEDS")}; do
    for arm in ${ARMS:-trained frozen}; do
        train=true
        [ $arm = frozen ] && train=false
        ini="$DIR/$arm-$s.ini" running_on=false
        [ -f "$DIR/$arm-$s/state" ] && ini="$DIR/$arm-$s.ini.new" running_on=true
        cat >"$ini" <<EOF2
[run]
dir = $arm-$s
iterations = $ITERATIONS
seed = $s
[policy]
$POLICY
[designer]
enabled = true
train = $train
source = template
template = $TEMPLATE
$DESIGNER
$REST
EOF2
        if $running_on; then # run it on: the same config, more iterations
            if [ "$(grep -v '^iterations = ' "$DIR/$arm-$s.ini")" != "$(grep -v '^iterations = ' "$ini")" ]; then
                echo "compare-arms: $DIR/$arm-$s was run with another config than this call's ($DIR/$arm-$s.ini against $ini); give another DIR" >&2
                rm -f "$ini"
                exit 1
            fi
            mv "$ini" "$DIR/$arm-$s.ini"
            sed -i "s/^iterations = .*/iterations = $ITERATIONS/" "$DIR/$arm-$s/config.ini"
            "$SPADE" train "$DIR/$arm-$s" >>"$DIR/$arm-$s.log" 2>&1 || { cat "$DIR/$arm-$s.log" >&2; exit 1; }
        else
            "$SPADE" train "$ini" >"$DIR/$arm-$s.log" 2>&1 || { cat "$DIR/$arm-$s.log" >&2; exit 1; }
        fi
    done
    trained="$trained${trained:+,}$DIR/trained-$s" frozen="$frozen${frozen:+,}$DIR/frozen-$s"
done
echo "compare-arms: seeds ${SEED_LIST:-1 to $SEEDS}, arms ${ARMS:-trained frozen}, $ITERATIONS iterations in $DIR; compare them with"
echo "  $SPADE report --compare trained=$trained frozen=$frozen --out $DIR/report"
