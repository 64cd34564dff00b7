#!/bin/sh
# bench_iteration.sh — the time of self-play iterations on a pretrained model:
# the one policy (MODEL) writes whole sources as the designer (designer.source
# = policy, its chat form), the gates judge them, it plays the valid ones with
# and without their hint, and one GRPO update trains it. Prints, per
# iteration, the seconds of each phase (train.jsonl's "time_s": designer
# prefill and decoding, gates, agent plays with their prefill and decoding,
# update, archive), the tokens written, sources per minute (of the designer's
# writing, and of the whole iteration), and the run's peak RSS and the load
# average before and after.
#
# What it is: the smallest knobs that still make a meaningful iteration
# (ENVS sources of MAX_SOURCE tokens, PLAYS paired plays of each valid one,
# short actions, no fixed-pool part), so the figures say what the main job's
# iteration costs; knobs are variables. What it is not: a test (nothing fails
# on a time), nor a learning result (one or two iterations learn nothing).
#
# Run from a built tree: bench/bench_iteration.sh
# Environment: MODEL (smollm2-135m-instruct; a known name or a .gguf path),
# ITERS (1), ENVS (4), MAX_SOURCE (384), PLAYS (4), ACTION (16: agent tokens
# per action), POOL (0: stdenv environments the agent also trains on an
# iteration, selfplay.pool_envs), CONTEXT (2048), TEMP (0.7), WRITER (policy;
# files: the "designer" writes FILES, stdenv sources that pass the gates, so
# the plays and the agent's update on valid environments are measured on the
# same model: a pretrained model that writes nothing valid never reaches them),
# LORA (0: [policy] lora_rank, the adapters' rank; the base frozen),
# FILES ("carry_add modpow linear sequence"; no corpus, so that the novelty
# gate, which compares with the corpus, lets them through), WORK (a scratch directory; default
# a new one under /tmp), SPADE (./spade). Qwen2.5-Coder-0.5B takes about 12 GB:
# on a shared machine run it under flock, one at a time:
#   MODEL=qwen2.5-coder-0.5b-instruct flock /tmp/qwen.lock bench/bench_iteration.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
spade=${SPADE:-$here/spade}
model=${MODEL:-smollm2-135m-instruct}
iters=${ITERS:-1}
envs=${ENVS:-4}
max_source=${MAX_SOURCE:-384}
plays=${PLAYS:-4}
action=${ACTION:-16}
pool=${POOL:-0}
writer=${WRITER:-policy}
files=${FILES:-carry_add modpow linear sequence}
context=${CONTEXT:-2048}
lora=${LORA:-0}
temp=${TEMP:-0.7}
work=${WORK:-$(mktemp -d /tmp/spade-bench-iteration.XXXXXX)}
[ -x "$spade" ] || { echo "bench_iteration: $spade not built (make)" >&2; exit 1; }
mkdir -p "$work"
cfg=$work/bench.ini
given="" nocorpus=""
if [ "$writer" = files ]; then
    mkdir -p "$work/given"
    for f in $files; do cp "$here/stdenv/$f.c" "$work/given/"; done
    given="files = $work/given"
    nocorpus="[corpus]
enabled = false"
fi
cat >"$cfg" <<EOF
; bench_iteration.sh: one policy, the pretrained $model, as designer and agent
[run]
dir = $work/run
iterations = $iters
seed = 1
[policy]
model = $model
context = $context
lora_rank = $lora
[designer]
enabled = true
source = $writer
$given
envs = $envs
max_source_tokens = $max_source
temperature = $temp
max_step_ms = 50
[selfplay]
plays = $plays
pool_envs = $pool
[pool]
dirs = $here/stdenv
[agent]
plays = $plays
max_action_tokens = $action
[grpo]
lr = 1e-5
$nocorpus
EOF
echo "bench_iteration: $model, $iters iteration(s): designer envs $envs x $max_source tokens, plays $plays," \
    "actions $action tokens, pool $pool, context $context, lora $lora, writer $writer; work $work"
echo "load before: $(cat /proc/loadavg)"
rm -rf "$work/run"
timer=""
if /usr/bin/time -v true >/dev/null 2>&1; then timer="/usr/bin/time -v -o $work/time.txt"; fi
# shellcheck disable=SC2086 # timer is a command prefix or nothing
$timer "$spade" train "$cfg" >"$work/out.txt" 2>&1
rc=$?
echo "load after:  $(cat /proc/loadavg)"
[ $rc -eq 0 ] || { echo "bench_iteration: spade train failed ($rc):" >&2; tail -20 "$work/out.txt" >&2; exit 1; }
grep '^iter ' "$work/out.txt"
py=python3
command -v "$py" >/dev/null 2>&1 || { echo "bench_iteration: no python3 to read $work/run/train.jsonl"; exit 0; }
"$py" - "$work/run/train.jsonl" <<'EOF'
import json, sys
keys = ["pool", "prompts", "design_prefill", "design_decode", "hints", "gates", "play", "play_prefill",
        "play_decode", "lookahead", "update", "archive", "total", "cpu"]
for line in open(sys.argv[1]):
    o = json.loads(line)
    t = o.get("time_s")
    if not t:
        continue
    print("iteration %d: written %d, valid %d, %d source tokens, %d agent samples, %d designer samples" %
          (o["iteration"], o["written"], o["valid"], o["source_tokens"], o["agent_samples"], o["designer_samples"]))
    print("  " + "  ".join("%s %.1f" % (k, t[k]) for k in keys if t.get(k, 0) > 0.05 or k in ("total", "cpu")))
    write = t["design_prefill"] + t["design_decode"]
    if write > 0:
        print("  designer: %.1f sources/min of writing, %.1f source tokens/s; %.2f sources/min of the iteration" %
              (60 * o["written"] / write, o["source_tokens"] / max(t["design_decode"], 1e-9),
               60 * o["written"] / t["total"]))
    failed = {k: v for k, v in o["failed_at"].items() if v}
    print("  gates: %s" % (", ".join("%s %d" % kv for kv in failed.items()) or "all valid"))
EOF
if [ -f "$work/time.txt" ]; then
    # CPU seconds beside the wall: on a loaded machine the wall is mostly waiting for a core
    awk -F': ' '/Maximum resident/ {printf "peak RSS %.0f MB\n", $2 / 1024} /Elapsed \(wall/ {print "wall (with load and checkpoint) " $2}
        /User time/ {u = $2} /System time/ {printf "CPU user %.0f s, system %.0f s\n", u, $2}' "$work/time.txt"
fi
