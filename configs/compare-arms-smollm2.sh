#!/bin/sh
# compare-arms-smollm2.sh — configs/compare-arms.sh on SmolLM2-135M-Instruct:
# the pretrained model as the one policy (designer and agent, in its chat
# form), the template designer filling templates/cups.c, trained against
# frozen, in runs/arms-smollm2 by default. About a minute an iteration of the
# trained arm on one core (its update), a third of that frozen. Needs the
# fetched model (./bootstrap). Not the comparison: spade report --compare.
# Usage: [ENVS=N] [PLAYS=N] [LR=X] configs/compare-arms-smollm2.sh [ITERATIONS] [SEEDS] [DIR] [SPADE]   (from the source tree)
exec env MODEL=smollm2-135m-instruct sh "$(dirname "$0")/compare-arms.sh" "${1:-30}" "${2:-3}" "${3:-runs/arms-smollm2}" "${4:-./spade}"
