#!/bin/sh
# test_train.sh — `spade train` on a fixed pool, driven as a person would: a
# micro run writes its run directory and one JSONL line per iteration; a bad
# config is refused with its file and line; the same run killed with SIGKILL
# at named points (core/killpoint.h) and at random moments and resumed each
# time (and once with SIGINT) ends with the
# same iteration metrics as the uninterrupted run (timings aside); an
# environment added to a pool directory while a run goes on joins the pool.
# Not a test of learning (tests/test_agent.c shows GRPO learning).

NAME=train
. "${srcdir:-.}/tests/tap.sh"
. "$SRC/tests/killpoints.sh"

mkdir -p "$TMP/pool"
cp "$SRC/tests/envs/digit_first.c" "$TMP/pool/"
config() { # config DIR ITERATIONS
    cat <<EOF2
[run]
dir = $1
iterations = $2
seed = 5
[policy]
layers = 1
heads = 2
width = 32
context = 96
[pool]
envs = carry_add:digits=1
dirs = pool
[agent]
envs = 8
plays = 8
max_action_tokens = 6
[grpo]
lr = 0.01
[designer]
enabled = false
EOF2
}
config straight 40 >"$TMP/straight.ini"
"$SPADE" train "$TMP/straight.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "a micro run finishes"; else bad "a micro run finishes"; fi
if [ "$(wc -l <"$TMP/straight/train.jsonl")" -eq 40 ]; then ok "one JSONL line per iteration"; else bad "one JSONL line per iteration"; fi
if grep -q '"per_env":{' "$TMP/straight/train.jsonl" && [ -f "$TMP/straight/config.ini" ] && grep -q 'iteration 39' "$TMP/straight/state"; then
    ok "the run directory holds config, metrics and state"
else bad "the run directory holds config, metrics and state"; fi
cp "$TMP/straight/train.jsonl" "$TMP/straight.log"
"$SPADE" train "$TMP/straight.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "is complete (40 iterations), numbered 0..39" "$TMP/out" && cmp -s "$TMP/straight.log" "$TMP/straight/train.jsonl"; then
    ok "the config a run started from, given again, resumes it (here: complete, nothing overwritten)"
else bad "the config a run started from, given again, resumes it"; fi
# the closing words come from the run's own figures: 40 iterations, 2 environments x 8 plays
if grep -q "What happened in $TMP/straight: iterations 0..39 (numbered from 0) of 40" "$TMP/out" &&
    grep -q "The agent played 640 episodes on the pool and made [0-9]* updates ([0-9]* samples)" "$TMP/out" &&
    grep -q "eval $TMP/straight/policy-39.ckpt --suite heldout" "$TMP/out" &&
    grep -q "raise \[run\] iterations in $TMP/straight/config.ini, then .*spade train $TMP/straight\$" "$TMP/out"; then
    ok "a finished run says what happened, from train.jsonl, and what to do next"
else bad "a finished run says what happened and what to do next"; fi
config straight 41 >"$TMP/other.ini"
"$SPADE" train "$TMP/other.ini" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "started from another config: $TMP/other.ini differs from $TMP/straight/config.ini at line 3" "$TMP/out" &&
    cmp -s "$TMP/straight.log" "$TMP/straight/train.jsonl"; then
    ok "another config naming the same run directory is refused, with the line that differs"
else bad "another config naming the same run directory is refused"; fi
# [grpo] micro_batch bounds the activations, not the update: at 1 the first update (iteration 11 of the
# straight run) has the default micro-batch's loss and gradient norm (the same sums in another order)
{ config mb1 40; printf '[grpo]\nmicro_batch = 1\n'; } >"$TMP/mb1.ini"
"$SPADE" train "$TMP/mb1.ini" >"$TMP/out" 2>&1
st=$?
first_update() { grep -m1 '"updated":true' "$1" | grep -o '"iteration":[0-9]*\|"loss":[^,]*\|"grad_norm":[^,]*' | tr '\n' ' '; }
u1=$(first_update "$TMP/mb1/train.jsonl")
u8=$(first_update "$TMP/straight.log")
if [ $st -eq 0 ] && [ -n "$u8" ] && [ "$u1" = "$u8" ]; then
    ok "[grpo] micro_batch = 1: the first update is the default micro-batch's ($u1)"
else bad "[grpo] micro_batch = 1: the first update ($u1) is the default micro-batch's ($u8)"; fi
{ config mb0 2; printf '[grpo]\nmicro_batch = 0\n'; } >"$TMP/mb0.ini"
"$SPADE" train "$TMP/mb0.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "mb0.ini:2[0-9]: \[grpo\] micro_batch = '0'" "$TMP/out"; then
    ok "[grpo] micro_batch = 0 is refused, naming file, line and key"
else bad "[grpo] micro_batch = 0 is refused, naming file, line and key"; fi
# [run] dir is printed as the user would type it: configs/../runs/x is runs/x
mkdir -p "$TMP/sub"
config ../norm 1 | sed '/^dirs = pool/d' >"$TMP/sub/norm.ini"
(cd "$TMP" && "$SPADE" train sub/norm.ini) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "done; metrics in norm/train.jsonl" "$TMP/out" && grep -q "report norm " "$TMP/out" &&
    ! grep -q "sub/\.\." "$TMP/out"; then
    ok "the run directory is printed normalised (sub/../norm is norm)"
else bad "the run directory is printed normalised"; fi
# a run that cannot start (its [policy] init is missing) leaves no run directory behind
printf '[run]\ndir = noinit\niterations = 2\n[policy]\ninit = missing.ckpt\n[pool]\nenvs = carry_add:digits=1\n' >"$TMP/noinit.ini"
"$SPADE" train "$TMP/noinit.ini" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "missing.ckpt" "$TMP/out" && [ ! -e "$TMP/noinit/config.ini" ] && [ ! -e "$TMP/noinit" ]; then
    ok "a train that fails on a missing checkpoint leaves no config.ini behind"
else bad "a train that fails on a missing checkpoint leaves no config.ini behind"; fi

printf '[run]\niterations = 3\n[agent]\nplays = one\n' >"$TMP/bad.ini"
"$SPADE" train "$TMP/bad.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "bad.ini:4: \[agent\] plays = 'one'" "$TMP/out"; then ok "a bad value names file, line and key"; else bad "a bad value names file, line and key"; fi
printf '[run\ndir = x\n' >"$TMP/nobracket.ini"
"$SPADE" train "$TMP/nobracket.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "nobracket.ini:1: '\[run': a section line without its closing '\]'" "$TMP/out"; then
    ok "a section line without its ']' is named, not the key after it"
else bad "a section line without its ']' is named"; fi
printf 'dir = x\n' >"$TMP/nosection.ini"
"$SPADE" train "$TMP/nosection.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "nosection.ini:1: dir = x is outside any \[section\]" "$TMP/out"; then ok "a key before any section is named so"
else bad "a key before any section is named so"; fi
printf '[agent]\ntemperature = 0\n' >"$TMP/greedy.ini"
"$SPADE" train "$TMP/greedy.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "greedy.ini: \[agent\] temperature = 0: the agent trains on its plays" "$TMP/out"; then
    ok "a greedy agent is refused: its plays have no gradient"
else bad "a greedy agent is refused: its plays have no gradient"; fi
printf '[designer]\nenabled = true\ntemperature = 0\n' >"$TMP/greedyd.ini"
"$SPADE" train "$TMP/greedyd.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "greedyd.ini: \[designer\] temperature = 0 with \[designer\] train = true" "$TMP/out"; then
    ok "a greedy trained designer is refused"
else bad "a greedy trained designer is refused"; fi
printf '[designer]\nenabled = true\nhint = selfish\n' >"$TMP/des.ini"
"$SPADE" train "$TMP/des.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "des.ini:3: \[designer\] hint = 'selfish': expected embedded" "$TMP/out"; then ok "a switch's unknown value is refused, not ignored"
else bad "a switch's unknown value is refused, not ignored"; fi

# Stopped by SIGINT, killed at named points, killed at random moments, resumed each time: the
# same metrics as the straight run.
strip() { sed 's/,"t_play":[0-9.]*,"t_update":[0-9.]*}/}/' "$1"; }
config sigint 40 >"$TMP/sigint.ini"
"$SPADE" train "$TMP/sigint.ini" >"$TMP/out" 2>&1 &
pid=$!
# The signal goes once an iteration is logged (the handler is in place by then), however long a
# loaded machine takes to get there; the bound is for a run that never logs one.
i=0
while [ ! -s "$TMP/sigint/train.jsonl" ] && kill -0 $pid 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
kill -INT $pid 2>/dev/null
wait $pid
st=$?
if [ $st -eq 1 ] && grep -q "interrupted in iteration" "$TMP/out"; then ok "SIGINT stops the run and says how to resume"
else bad "SIGINT stops the run and says how to resume (status $st)"; fi
"$SPADE" train "$TMP/sigint" >"$TMP/out" 2>&1
strip "$TMP/straight/train.jsonl" >"$TMP/a"
strip "$TMP/sigint/train.jsonl" >"$TMP/b"
if cmp -s "$TMP/a" "$TMP/b"; then
    ok "stopped by SIGINT and resumed = uninterrupted"
else bad "stopped by SIGINT and resumed = uninterrupted"; fi
# At named points of five iterations (core/killpoint.h): after the plays, after the update,
# after the log line, between checkpoint and state, between state and the unlink of the previous
# checkpoint; each run dies exactly there, whatever the machine's load.
config killed 40 >"$TMP/killed.ini"
kill_points "$TMP/killed.ini" "$TMP/killed" plays:3 update:9 logged:15 checkpoint:22 state:30
if [ $kills -eq 5 ]; then ok "the run died at all 5 named points"; else bad "the run died at 5 named points ($kills landed; missed:$missed)"; fi
strip "$TMP/straight/train.jsonl" >"$TMP/a"
strip "$TMP/killed/train.jsonl" >"$TMP/b"
if cmp -s "$TMP/a" "$TMP/b"; then ok "killed and resumed = uninterrupted, iteration by iteration"
else diff "$TMP/a" "$TMP/b" >"$TMP/out"; bad "killed and resumed = uninterrupted"; fi
if [ "$(ls "$TMP/killed"/*.ckpt | wc -l)" -eq 1 ]; then ok "one checkpoint is kept"; else bad "one checkpoint is kept"; fi
# And, as an extra, killed at random moments (looping until one kill landed), resumed each time.
config killedr 40 >"$TMP/killedr.ini"
kill_random "$TMP/killedr.ini" "$TMP/killedr" 39
strip "$TMP/killedr/train.jsonl" >"$TMP/b"
if [ $kills -ge 1 ] && cmp -s "$TMP/a" "$TMP/b"; then ok "killed at random moments ($kills landed) and resumed = uninterrupted"
else diff "$TMP/a" "$TMP/b" >"$TMP/out"; bad "killed at random moments ($kills landed) and resumed = uninterrupted"; fi
# That window, made on purpose: a stale checkpoint beside the state's goes at the next resume.
cp -r "$TMP/straight" "$TMP/stale"
cp "$TMP/stale/policy-39.ckpt" "$TMP/stale/policy-19.ckpt"
# and the other window a kill has there: in the middle of writing a log line (a short write),
# which leaves a line cut short, here one whose cut iteration number reads as an old iteration
printf '{"iteration":1' >>"$TMP/stale/train.jsonl"
"$SPADE" train "$TMP/stale" >"$TMP/out" 2>&1
st=$?
if [ $st -eq 0 ] && [ "$(ls "$TMP/stale"/*.ckpt)" = "$TMP/stale/policy-39.ckpt" ] && grep -q "is complete" "$TMP/out"; then
    ok "a resume removes a checkpoint a kill left beside the state's"
else bad "a resume removes a checkpoint a kill left beside the state's (status $st)"; fi
if cmp -s "$TMP/straight/train.jsonl" "$TMP/stale/train.jsonl"; then ok "a resume drops a log line a kill cut short"
else tail -c 300 "$TMP/stale/train.jsonl" >"$TMP/out"; bad "a resume drops a log line a kill cut short"; fi

# A run that ends between writing config.base and config.ini, as a kill there would (here
# config.base cannot be written: a directory is in its place), leaves no run that a resume
# would take its relative paths for from the run directory: config.base is written first.
config win 2 >"$TMP/win.ini"
mkdir -p "$TMP/win/config.base"
"$SPADE" train "$TMP/win.ini" >"$TMP/out" 2>&1
st=$?
"$SPADE" train "$TMP/win" >>"$TMP/out" 2>&1
st2=$?
if [ $st -eq 1 ] && [ $st2 -eq 1 ] && [ ! -e "$TMP/win/config.ini" ] && grep -q "not a run directory" "$TMP/out"; then
    ok "a run ended between config.base and config.ini leaves no run to resume"
else bad "a run ended between config.base and config.ini leaves no run to resume (status $st, $st2)"; fi

# spade eval on the run's checkpoint: the table, and JSONL on stdout.
"$SPADE" eval "$TMP/straight/policy-39.ckpt" carry_add:digits=1 "$TMP/pool/digit_first.c" -n 6 --hint --jsonl - >"$TMP/ev.jsonl" 2>"$TMP/out"
if [ $? -eq 0 ] && [ "$(grep -c '"policy":{"n":6' "$TMP/ev.jsonl")" -eq 2 ] && grep -q '"summary":true' "$TMP/ev.jsonl"; then
    ok "spade eval writes one JSON object per environment and a summary"
else bad "spade eval writes one JSON object per environment and a summary"; fi
if grep -q '| carry_add:digits=1 |' "$TMP/out" && grep -q 'mean over 2 environments' "$TMP/out"; then ok "spade eval prints the table (on stderr when stdout is JSONL)"
else bad "spade eval prints the table"; fi
"$SPADE" eval none --suite heldout -n 2 >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '| pancake |' "$TMP/out" && [ "$(grep -c '^| ' "$TMP/out")" -ge 13 ]; then ok "spade eval none --suite heldout plays the held-out suite"
else bad "spade eval none --suite heldout plays the held-out suite"; fi
"$SPADE" eval "$TMP/nope.ckpt" carry_add >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q 'nope.ckpt' "$TMP/out"; then ok "spade eval names a missing checkpoint"; else bad "spade eval names a missing checkpoint"; fi

# spade run --agent policy:CKPT: the policy plays (and --show shows it)
"$SPADE" run carry_add:digits=1 --agent policy:"$TMP/straight/policy-39.ckpt" -n 3 --jsonl - >"$TMP/run.jsonl" 2>"$TMP/out"
if [ $? -eq 0 ] && [ "$(grep -c '"episode":' "$TMP/run.jsonl")" -eq 3 ] && grep -q '"agent":"policy"' "$TMP/run.jsonl"; then
    ok "spade run --agent policy:CKPT plays the episodes with the policy"
else bad "spade run --agent policy:CKPT plays the episodes with the policy"; fi
"$SPADE" run carry_add --agent policy:"$TMP/none.ckpt" -n 1 >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q 'none.ckpt' "$TMP/out"; then ok "spade run --agent policy: names a missing checkpoint"; else bad "spade run --agent policy: names a missing checkpoint"; fi
# spade play --policy CKPT: :policy lets the policy play a step, a person's line still plays
printf ':policy\n:p\nhello\n:quit\n' | "$SPADE" play carry_add:digits=1 --policy "$TMP/straight/policy-39.ckpt" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '^policy> ' "$TMP/out")" -ge 1 ] && grep -q '> hello' "$TMP/out"; then
    ok "spade play --policy: :policy plays the policy's action, typed lines still play"
else bad "spade play --policy: :policy plays the policy's action, typed lines still play"; fi

# [eval] every = 2: the held-out suite after every second iteration, as its own JSONL line
config evald 4 >"$TMP/evald.ini"
printf '[eval]\nevery = 2\nepisodes = 2\n' >>"$TMP/evald.ini"
"$SPADE" train "$TMP/evald.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '"eval":{"suite":"heldout"' "$TMP/evald/train.jsonl")" -eq 2 ] &&
    grep -q '"iteration":3,"eval":' "$TMP/evald/train.jsonl" && grep -q '"pancake":' "$TMP/evald/train.jsonl"; then
    ok "eval.every evaluates on the held-out suite and logs it"
else bad "eval.every evaluates on the held-out suite and logs it"; fi

# pool.curriculum = adaptive: cur_step is won only at hard = 0, so the level goes 0 -> 1 after a
# window of 2 successful iterations and back to 0 after 2 failed ones; the levels survive a resume
cat >"$TMP/cur.ini" <<EOF2
[run]
dir = cur
iterations = 8
seed = 3
[policy]
layers = 1
heads = 2
width = 32
context = 64
[pool]
envs = $SRC/tests/envs/cur_step.c
curriculum = adaptive
curriculum_param = hard
curriculum_levels = 5
curriculum_window = 2
[agent]
plays = 4
max_action_tokens = 4
[designer]
enabled = false
EOF2
"$SPADE" train "$TMP/cur.ini" >"$TMP/out" 2>&1
levels=$(sed 's/.*"cur_step:hard=\([0-9]\)".*/\1/' "$TMP/cur/train.jsonl" | tr -d '\n')
if [ "$levels" = "00110011" ]; then ok "the adaptive curriculum raises the level after a good window and lowers it after a bad one ($levels)"
else bad "the adaptive curriculum: levels $levels, wanted 00110011"; fi
sed 's/^iterations = 8/iterations = 5/; s/^dir = cur/dir = cur5/' "$TMP/cur.ini" >"$TMP/cur5.ini"
"$SPADE" train "$TMP/cur5.ini" >"$TMP/out" 2>&1
sed -i 's/^iterations = 5/iterations = 8/' "$TMP/cur5/config.ini"
"$SPADE" train "$TMP/cur5" >"$TMP/out" 2>&1
if cmp -s "$(strip "$TMP/cur/train.jsonl" >"$TMP/c1"; echo "$TMP/c1")" "$(strip "$TMP/cur5/train.jsonl" >"$TMP/c2"; echo "$TMP/c2")"; then
    ok "the curriculum's levels and windows survive a resume"
else diff "$TMP/c1" "$TMP/c2" >"$TMP/out"; bad "the curriculum's levels and windows survive a resume"; fi
# The window is consecutive blocks of curriculum_window iterations: cur_coin is a fair coin at
# every level, so some windows land between down and up; the logged levels must be those of the
# rule replayed on the logged successes (a window left open past its size drifts from it)
sed 's#^envs = .*cur_step.c#envs = '"$SRC"'/tests/envs/cur_coin.c#; s/^dir = cur/dir = coin/; s/^iterations = 8/iterations = 24/' \
    "$TMP/cur.ini" >"$TMP/coin.ini"
printf 'curriculum_up = 0.75\ncurriculum_down = 0.25\n' >"$TMP/coin.add"
sed -i '/^curriculum_window/r '"$TMP/coin.add" "$TMP/coin.ini"
"$SPADE" train "$TMP/coin.ini" >"$TMP/out" 2>&1
verdict=$(sed -n 's/.*"cur_coin:hard=\([0-9]\)":\([0-9.]*\).*/\1 \2/p' "$TMP/coin/train.jsonl" | awk '
    { if ($1 != lv) wrong++; sum += $2; if (++k == 2) { m = sum / k
          if (m >= 0.75 && lv < 4) { lv++; up++ } else if (m <= 0.25 && lv > 0) { lv--; down++ } else if (m < 0.75 && m > 0.25) mid++
          k = 0; sum = 0 } lines++ }
    END { printf "%d %d %d %d %d", lines, wrong, up, down, mid }')
set -- $verdict
if [ "$1" = 24 ] && [ "$2" = 0 ] && [ "$3" -gt 0 ] && [ "$4" -gt 0 ] && [ "$5" -gt 0 ]; then
    ok "the curriculum judges each window of its size on its own ($3 up, $4 down, $5 in between)"
else bad "the curriculum's window: iterations, wrong levels, up, down, in between = $verdict"; fi
printf '[pool]\ncurriculum = adaptive\n' >"$TMP/cbad.ini"
"$SPADE" train "$TMP/cbad.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "curriculum_param" "$TMP/out"; then ok "curriculum = adaptive without a param is refused"; else bad "curriculum = adaptive without a param is refused"; fi
# curriculum_param = ENV:NAME moves that environment's param only; a misspelt one is reported
sed 's#^envs = .*cur_step.c#envs = '"$SRC"'/tests/envs/cur_step.c\nenvs = '"$SRC"'/tests/envs/cur_coin.c#; s/^dir = cur/dir = curenv/; s/^curriculum_param = hard/curriculum_param = cur_step:hard\ncurriculum_param = cur_coin:hardd/' \
    "$TMP/cur.ini" >"$TMP/curenv.ini"
"$SPADE" train "$TMP/curenv.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(sed 's/.*"cur_step:hard=\([0-9]\)".*/\1/' "$TMP/curenv/train.jsonl" | tr -d '\n')" = 00110011 ] &&
    grep -q '"cur_coin":' "$TMP/curenv/train.jsonl" && ! grep -q '"cur_coin:' "$TMP/curenv/train.jsonl"; then
    ok "curriculum_param = ENV:NAME moves that environment's param and no other's"
else bad "curriculum_param = ENV:NAME moves that environment's param and no other's"; fi
if grep -q "cur_coin has no param hardd" "$TMP/out"; then ok "a misspelt ENV:NAME curriculum param is reported"; else bad "a misspelt ENV:NAME curriculum param is reported"; fi
printf '[pool]\ncurriculum = adaptive\ncurriculum_param = cur_step:\n' >"$TMP/cbad2.ini"
"$SPADE" train "$TMP/cbad2.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "cbad2.ini:3.*expected ENV:NAME" "$TMP/out"; then ok "curriculum_param = ENV: without a name is refused with its line"; else bad "curriculum_param = ENV: refused: $(cat "$TMP/out")"; fi

# A file added to a pool directory during the run joins the pool.
config hot 2000 >"$TMP/hot.ini"
"$SPADE" train "$TMP/hot.ini" >"$TMP/out" 2>&1 &
pid=$!
# Both waits are on the event (60 s bounds for a loaded machine, left early when the run ends).
i=0
while [ ! -s "$TMP/hot/train.jsonl" ] && kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
sed 's/ENV("digit_first"/ENV("digit_too"/' "$SRC/tests/envs/digit_first.c" >"$TMP/pool/digit_too.c"
i=0
while ! grep -q '"digit_too"' "$TMP/hot/train.jsonl" 2>/dev/null && kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
kill -INT $pid 2>/dev/null
wait $pid
if grep -q '"digit_too"' "$TMP/hot/train.jsonl"; then ok "a file added to the pool directory joins the pool"; else bad "a file added to the pool directory joins the pool"; fi
if grep -q "pool: digit_too joined" "$TMP/out"; then ok "the run says it joined"; else bad "the run says it joined"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
