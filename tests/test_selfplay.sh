#!/bin/sh
# test_selfplay.sh — `spade train` with the designer ([designer] enabled =
# true), driven as a person would: a 2-iteration micro run whose "designer"
# writes a given set of files (designer.source = files: a broken one, a coin
# flip and four good ones) classifies each by its first failed gate, plays the
# valid ones and archives everything; a run whose designer is the policy
# writes, is judged and trains; designer.hint = self samples each hint from the
# policy, archives it and does not train on it; the ablation switches change
# what they claim;
# a run killed with SIGKILL at every phase boundary of an iteration (named kill
# points, core/killpoint.h), and at random moments, and resumed lands on the
# same iteration metrics and archive as an uninterrupted one. Every line's
# time_s holds the phases' seconds. `spade train` with no argument runs
# self-play on the pretrained SmolLM2 (skipped, saying so, without it) and
# `--preset gpt` the from-scratch GPT whose base configs/default-fixed.ini uses.
# Not a test of learning (the micro model learns nothing in 2 iterations).

NAME=selfplay
. "${srcdir:-.}/tests/tap.sh"
. "$SRC/tests/killpoints.sh"

mkdir -p "$TMP/given"
for f in carry_add modpow linear sequence; do cp "$SRC/stdenv/$f.c" "$TMP/given/"; done
cp "$SRC/tests/envs/gate_coin.c" "$TMP/given/zz_coin.c"
printf '#include <spade/dsl.h>\nENV("broken", "d")\nint x = ;\n' >"$TMP/given/broken.c"
config() { # config DIR ITERATIONS SOURCE [extra lines]
    cat <<EOF2
[run]
dir = $1
iterations = $2
seed = 4
[policy]
layers = 1
heads = 2
width = 32
context = 640
[designer]
enabled = true
envs = 3
source = $3
files = given
max_source_tokens = 96
max_step_ms = 200
gate_seeds = 10
[selfplay]
plays = 4
[agent]
max_action_tokens = 6
[corpus]
enabled = false
EOF2
}
strip() { sed 's/,"t_design".*}$/}/' "$1"; }
# times_ok FILE N: N lines with a "time_s" holding every phase, none negative, the disjoint phases summing
# to at most total and the plays' prefill and decoding to at most the plays (each printed to 1 ms)
times_ok() {
    sed -n 's/.*"time_s":{\([^}]*\)}.*/\1/p' "$1" | awk -F'[:,]' -v want="$2" '
    {
        n++
        split("", v)
        for (i = 1; i < NF; i += 2) {
            k = $i
            gsub(/"/, "", k)
            v[k] = $(i + 1) + 0
            if (v[k] < 0) bad = 1
        }
        nk = split("pool prompts design_prefill design_decode hints gates play play_prefill play_decode lookahead update archive total cpu", K, " ")
        for (j = 1; j <= nk; j++) if (!(K[j] in v)) bad = 1
        s = 0
        for (j = 1; j <= nk; j++) if (K[j] !~ /^(total|cpu|play_prefill|play_decode)$/) s += v[K[j]]
        if (s > v["total"] + 0.006 || v["play_prefill"] + v["play_decode"] > v["play"] + 0.002) bad = 1
    }
    END { exit (bad || n != want) }'
}

# the given files: each classified by its first failed gate
config given 2 files >"$TMP/given.ini"
"$SPADE" train "$TMP/given.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "a micro self-play run finishes"; else bad "a micro self-play run finishes"; fi
if [ "$(wc -l <"$TMP/given/train.jsonl")" -eq 2 ] && grep -q '"written":3,"valid":2' "$TMP/given/train.jsonl"; then
    ok "one JSONL line per iteration, valid environments counted"
else bad "one JSONL line per iteration, valid environments counted"; fi
if times_ok "$TMP/given/train.jsonl" 2; then ok "every line has the iteration's seconds by phase (time_s), summing to at most its total"
else grep -o '"time_s":{[^}]*}' "$TMP/given/train.jsonl" >>"$TMP/out"; bad "every line has the iteration's seconds by phase (time_s), summing to at most its total"; fi
"$SPADE" archive list "$TMP/given" >"$TMP/out" 2>&1
if grep -q ' compile ' "$TMP/out" && grep -q ' random_agent ' "$TMP/out" && [ "$(grep -c ' valid ' "$TMP/out")" -eq 4 ]; then
    ok "the archive has every environment with its first failed gate"
else bad "the archive has every environment with its first failed gate"; fi
id=$(grep ' random_agent ' "$TMP/out" | awk '{print $1}' | head -1)
"$SPADE" archive show "$TMP/given" "$id" >"$TMP/out" 2>&1
if grep -q 'random agent won' "$TMP/out" && grep -q 'ENV("gate_coin"' "$TMP/out"; then ok "archive show gives the gate's reason and the source"
else bad "archive show gives the gate's reason and the source"; fi
if grep -q '"vendi_n":0\.[0-9]' "$TMP/given/train.jsonl" && [ -s "$TMP/given/spade.db" ]; then ok "Vendi/n per iteration"; else bad "Vendi/n per iteration"; fi
if grep -q '"vendi_n":0\.[0-9]' "$TMP/given/train.jsonl" && ! grep -q '"vendi_n_games":[0-9]' "$TMP/given/train.jsonl"; then
    ok "vendi_n_games is null outside the template mode"
else bad "vendi_n_games is null outside the template mode"; fi

# spade check --gates: the loop's gates on one file
"$SPADE" check --gates "$SRC/stdenv/nim.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '^PASS ' "$TMP/out")" -eq 13 ] && grep -q 'passes every gate' "$TMP/out"; then
    ok "check --gates passes a stdenv environment on all thirteen gates"
else bad "check --gates passes a stdenv environment on all thirteen gates"; fi
"$SPADE" check --gates "$SRC/tests/envs/gate_hintanswer.c" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q '^FAIL hint_echo: echoing the hint' "$TMP/out" && grep -q 'refused by the gates' "$TMP/out"; then
    ok "check --gates names the gate that refuses a hint with the answer, exit 1"
else bad "check --gates names the gate that refuses a hint with the answer, exit 1"; fi

# a STEP that hangs: spade check fails it naming the deadline (exit 1), and the gates stop at the first
# timeout with the lines before it out; a short deadline, and nothing here measures time
"$SPADE" check --timeout 0.5 "$SRC/tests/envs/gate_hang.c" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q '^FAIL step_deterministic: a call timed out.*0.5 s call.*deadline' "$TMP/out"; then
    ok "spade check fails a hanging STEP, naming the deadline, exit 1"
else bad "spade check fails a hanging STEP, naming the deadline, exit 1"; fi
"$SPADE" check --gates --timeout 0.5 "$SRC/tests/envs/gate_hang.c" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q '^PASS compile' "$TMP/out" && grep -q '^FAIL limits: .*timeout.*deadline' "$TMP/out" &&
    [ "$(grep -c '^SKIP .*timed out' "$TMP/out")" -eq 11 ]; then
    ok "check --gates stops a hanging STEP at the first timeout"
else bad "check --gates stops a hanging STEP at the first timeout"; fi
# plain spade check warns of a hint that gives the answer and points to the gates
"$SPADE" check "$SRC/tests/envs/gate_hintanswer.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '^WARN hint: playing .* from the hint won seed .*spade check --gates' "$TMP/out"; then
    ok "spade check warns of a hint that gives the answer, pointing to --gates"
else bad "spade check warns of a hint that gives the answer, pointing to --gates"; fi

# selfplay.repeats: plays / repeats seeds, each played repeats times an arm
config repeats 1 files >"$TMP/repeats.ini"
printf '[selfplay]\nrepeats = 2\n' >>"$TMP/repeats.ini"
"$SPADE" train "$TMP/repeats.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '"written":3,"valid":2' "$TMP/repeats/train.jsonl"; then ok "selfplay.repeats = 2 plays the valid environments"
else bad "selfplay.repeats = 2 plays the valid environments"; fi
config repeats3 1 files >"$TMP/repeats3.ini"
printf '[selfplay]\nrepeats = 3\n' >>"$TMP/repeats3.ini"
"$SPADE" train "$TMP/repeats3.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q 'plays = 4 is not a multiple of repeats = 3' "$TMP/out"; then ok "plays not a multiple of selfplay.repeats is refused"
else bad "plays not a multiple of selfplay.repeats is refused"; fi

# regen_every = 2 keeps the valid environments for the next iteration; replay = 1 adds a past one
config regen 4 files >"$TMP/regen.ini"
printf '[selfplay]\nregen_every = 2\nreplay = 1\n' >>"$TMP/regen.ini"
"$SPADE" train "$TMP/regen.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '"iteration":1,"written":0,"valid":0,"kept":2,"replayed":0' "$TMP/regen/train.jsonl" &&
    grep -q '"iteration":2,"written":3,"valid":2,"kept":0,"replayed":1' "$TMP/regen/train.jsonl" &&
    grep -q '"iteration":3,"written":0,"valid":0,"kept":2,"replayed":1' "$TMP/regen/train.jsonl"; then
    ok "selfplay.regen_every keeps environments between writings; selfplay.replay plays a past one again"
else bad "selfplay.regen_every and selfplay.replay"; cp "$TMP/regen/train.jsonl" "$TMP/out" 2>/dev/null; fi

# the policy as the designer: it writes, the gates judge, it trains (or not, frozen)
config policy 1 policy >"$TMP/policy.ini"
"$SPADE" train "$TMP/policy.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q '"written":3' "$TMP/policy/train.jsonl" && ! grep -q '"source_tokens":0,' "$TMP/policy/train.jsonl"; then
    ok "the policy writes the environments (source tokens sampled)"
else bad "the policy writes the environments"; fi
if times_ok "$TMP/policy/train.jsonl" 1 && grep -q 'iter 0 \[0..0\] .* [0-9]*s: design [0-9.]*+[0-9.]* gates [0-9.]* play' "$TMP/out"; then
    ok "a writing policy's time_s splits the designer's prefill from its decoding; the progress line shows them"
else bad "a writing policy's time_s and its progress line"; fi
# corpus on: every prompt names its grounding document; off: none does
config grounded 1 policy | sed 's/^enabled = false$/enabled = true/' >"$TMP/grounded.ini"
"$SPADE" train "$TMP/grounded.ini" >"$TMP/out" 2>&1
"$SPADE" archive show "$TMP/grounded" 1 >"$TMP/out" 2>&1
if grep -q 'corpus item .*stdenv/' "$TMP/out"; then ok "corpus.enabled = true grounds the prompt on a stdenv document"; else bad "corpus.enabled grounds the prompt"; fi
"$SPADE" archive show "$TMP/policy" 1 >"$TMP/out" 2>&1
if grep -q 'corpus item -' "$TMP/out"; then ok "corpus.enabled = false: no grounding document"; else bad "corpus.enabled = false: no grounding document"; fi
printf '[designer]\nenabled = true\nreward = sometimes\n' >"$TMP/bad.ini"
"$SPADE" train "$TMP/bad.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "bad.ini:3: \[designer\] reward = 'sometimes'" "$TMP/out"; then ok "a bad designer key names file, line and value"
else bad "a bad designer key names file, line and value"; fi

# designer.hint = self: the policy reads each source and writes its hint (not the HINT block); the archive
# keeps the hint used; the hint sample is never trained on
config selfhint 2 files >"$TMP/selfhint.ini"
printf '[designer]\nhint = self\nhint_temperature = 0.5\nhint_tokens = 24\n' >>"$TMP/selfhint.ini"
"$SPADE" train "$TMP/selfhint.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/selfhint/train.jsonl")" -eq 2 ] && [ "$(grep -c '"hint_tokens":[1-9]' "$TMP/selfhint/train.jsonl")" -eq 2 ] &&
    grep -q '"hint_tokens":0,' "$TMP/given/train.jsonl"; then
    ok "a 2-iteration micro run with designer.hint = self samples hints"
else bad "a 2-iteration micro run with designer.hint = self samples hints"; fi
hid=$("$SPADE" archive list "$TMP/given" | grep ' valid ' | tail -1 | awk '{print $1}')
"$SPADE" archive show "$TMP/given" "$hid" >"$TMP/a" 2>&1
"$SPADE" archive show "$TMP/selfhint" "$hid" >"$TMP/b" 2>&1
block=$(grep -a '^hint: ' "$TMP/a" | head -1 | cut -c7-40)
if [ -n "$block" ] && [ "$block" != "-" ] && grep -aq '^hint: ' "$TMP/b" && ! grep -a '^hint: ' "$TMP/b" | grep -aqF "$block" &&
    [ "$(grep -a -A1 '^---$' "$TMP/a" | head -2)" = "$(grep -a -A1 '^---$' "$TMP/b" | head -2)" ]; then
    ok "the archive keeps the hint used: the HINT block's with embedded, another with self (same source)"
else { echo "block [$block]"; head -5 "$TMP/b"; } >"$TMP/out"; bad "the archive keeps the hint used"; fi
# the hint comes from the policy: another policy init writes another hint; hint_tokens caps what is sampled
sed 's/^width = 32$/width = 32\nseed = 9/; s/^hint_tokens = 24$/hint_tokens = 1/; s/^dir = selfhint$/dir = selfhint2/' \
    "$TMP/selfhint.ini" >"$TMP/selfhint2.ini"
"$SPADE" train "$TMP/selfhint2.ini" >"$TMP/out" 2>&1
"$SPADE" archive show "$TMP/selfhint2" "$hid" >"$TMP/c" 2>&1
if [ "$(grep -c '"hint_tokens":3,' "$TMP/selfhint2/train.jsonl")" -eq 2 ] && ! cmp -s "$TMP/b" "$TMP/c"; then
    ok "the self-written hint is the policy's sample, at most designer.hint_tokens tokens"
else bad "the self-written hint is the policy's sample"; fi
# not trained on: an environment whose no-hint plays train the agent; embedded and self update the same way
mkdir -p "$TMP/seedret"
cp "$SRC/tests/envs/hint_seedreturn.c" "$TMP/seedret/"
config upd_embedded 1 files | sed 's/^files = given$/files = seedret/; s/^envs = 3$/envs = 1/' >"$TMP/upd_embedded.ini"
sed 's/^dir = upd_embedded$/dir = upd_self/' "$TMP/upd_embedded.ini" >"$TMP/upd_self.ini"
printf '[designer]\nhint = self\n' >>"$TMP/upd_self.ini"
"$SPADE" train "$TMP/upd_embedded.ini" >"$TMP/out" 2>&1 && "$SPADE" train "$TMP/upd_self.ini" >>"$TMP/out" 2>&1
if grep -q '"agent_samples":[1-9]' "$TMP/upd_self/train.jsonl" && grep -q '"hint_tokens":[1-9]' "$TMP/upd_self/train.jsonl" &&
    [ -s "$TMP/upd_self/policy-0.ckpt" ] && cmp -s "$TMP/upd_embedded/policy-0.ckpt" "$TMP/upd_self/policy-0.ckpt"; then
    ok "the hint sample is not trained on: the update with hint = self equals the one with embedded"
else bad "the hint sample is not trained on"; fi
# selfplay.train_hint_arm: the hint plays are agent samples too (a group of their own), so the update differs
sed 's/^dir = upd_embedded$/dir = upd_hintarm/' "$TMP/upd_embedded.ini" >"$TMP/upd_hintarm.ini"
printf '[selfplay]\ntrain_hint_arm = true\n' >>"$TMP/upd_hintarm.ini"
"$SPADE" train "$TMP/upd_hintarm.ini" >"$TMP/out" 2>&1
ne=$(grep -o '"agent_samples":[0-9]*' "$TMP/upd_embedded/train.jsonl" | cut -d: -f2)
nh=$(grep -o '"agent_samples":[0-9]*' "$TMP/upd_hintarm/train.jsonl" | cut -d: -f2)
ha=$(grep -o '"hint_arm_samples":[0-9]*' "$TMP/upd_hintarm/train.jsonl" | cut -d: -f2)
if [ -n "$ha" ] && [ "$ha" -gt 0 ] && [ "$nh" -eq $((ne + ha)) ] && grep -q '"hint_arm_samples":0' "$TMP/upd_embedded/train.jsonl" &&
    ! cmp -s "$TMP/upd_embedded/policy-0.ckpt" "$TMP/upd_hintarm/policy-0.ckpt"; then
    ok "selfplay.train_hint_arm adds the hint plays to the agent's samples ($ne + $ha) and changes the update"
else bad "selfplay.train_hint_arm adds the hint plays to the agent's samples (no-hint $ne, with $nh, hint arm $ha)"; fi
printf '[selfplay]\ntrain_hint_arm = sometimes\n' >"$TMP/badarm.ini"
"$SPADE" train "$TMP/badarm.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "badarm.ini:2: \[selfplay\] train_hint_arm = 'sometimes'" "$TMP/out"; then ok "a bad train_hint_arm names file and line"
else bad "a bad train_hint_arm names file and line"; fi
# the policy designer: the hint batch leaves its sources as they were
config policyhint 1 policy >"$TMP/policyhint.ini"
printf '[designer]\nhint = self\n' >>"$TMP/policyhint.ini"
"$SPADE" train "$TMP/policyhint.ini" >"$TMP/out" 2>&1
st=$(grep -o '"source_tokens":[0-9]*' "$TMP/policy/train.jsonl")
if [ -n "$st" ] && grep -q "$st,\"hint_tokens\":[1-9]" "$TMP/policyhint/train.jsonl"; then
    ok "hint = self with the policy as designer: the same sources, then the hints"
else bad "hint = self with the policy as designer"; fi
for kv in 'hint = sometimes' 'hint_tokens = 0' 'hint_temperature = -1'; do
    printf '[designer]\nenabled = true\n%s\n' "$kv" >"$TMP/bad.ini"
    "$SPADE" train "$TMP/bad.ini" >"$TMP/out" 2>&1
    if [ $? -eq 2 ] && grep -qF "bad.ini:3: [designer] ${kv% = *} = '${kv#* = }'" "$TMP/out"; then ok "[designer] $kv is refused, naming the field"
    else bad "[designer] $kv is refused, naming the field"; fi
done

# killed at random moments and resumed: the same metrics and the same archive (with self-written hints,
# drawn from the run seed, iteration and slot, so a resumed run writes the same ones)
# designer.reward = learning_potential: measured in the iteration it rewards (a trial agent step on a copy
# of the policy, the no-hint arm replayed on the same seeds); lp_mark is won by half of a fresh policy's
# actions and lr = 0.3 is a step big enough to flip some of the 8 plays of a micro policy
mkdir -p "$TMP/mark" && cp "$SRC/tests/envs/lp_mark.c" "$TMP/mark/"
lpconfig() { # lpconfig DIR ITERATIONS REWARD
    config "$1" "$2" files | sed -e 's/^envs = 3$/envs = 1/' -e 's/^files = given$/files = mark/' -e 's/^plays = 4$/plays = 8/'
    printf '[designer]\nreward = %s\n[grpo]\nlr = 0.3\n' "$3"
}
lpconfig lp 2 learning_potential >"$TMP/lp.ini"
lpconfig lpblend 2 blend >"$TMP/lpblend.ini"
"$SPADE" train "$TMP/lp.ini" >"$TMP/out" 2>&1
st=$?
if [ $st -eq 0 ] && [ "$(wc -l <"$TMP/lp/train.jsonl")" -eq 2 ] &&
    [ "$(grep -c '"learning_potential":[0-9.]*,"pass_after":[0-9.]*,' "$TMP/lp/train.jsonl")" -eq 2 ] &&
    grep -q '"learning_potential":0\.[0-9]*[1-9]' "$TMP/lp/train.jsonl"; then
    ok "a 2-iteration micro run with designer.reward = learning_potential measures a potential"
else cp "$TMP/lp/train.jsonl" "$TMP/out" 2>/dev/null; bad "a 2-iteration micro run with designer.reward = learning_potential"; fi
# the designer reward is the potential (one environment per iteration: the mean is its value)
if sed 's/.*"designer_reward":\([^,]*\),.*"learning_potential":\([^,]*\),.*/\1 \2/' "$TMP/lp/train.jsonl" |
    awk '$1 != $2 { bad = 1 } END { exit bad }'; then ok "learning_potential: the designer's reward is the measured potential"
else bad "learning_potential: the designer's reward is the measured potential"; fi
"$SPADE" train "$TMP/lpblend.ini" >"$TMP/out" 2>&1
"$SPADE" archive list "$TMP/lp" | awk 'NR > 1 { print $5, $6, $7 }' >"$TMP/a"
"$SPADE" archive list "$TMP/lpblend" | awk 'NR > 1 { print $5, $6, $7 }' >"$TMP/b"
"$SPADE" archive list "$TMP/lp" | awk 'NR > 1 { print $8 }' >"$TMP/ra"
"$SPADE" archive list "$TMP/lpblend" | awk 'NR > 1 { print $8 }' >"$TMP/rb"
if [ -s "$TMP/a" ] && cmp -s "$TMP/a" "$TMP/b" && ! cmp -s "$TMP/ra" "$TMP/rb" && grep -q '"learning_potential":null' "$TMP/lpblend/train.jsonl"; then
    ok "the switch changes the designer's rewards, not the plays (blend on the same run rewards otherwise)"
else paste "$TMP/a" "$TMP/ra" "$TMP/b" "$TMP/rb" >"$TMP/out"; bad "learning_potential changes the designer's rewards, not the plays"; fi
lpconfig lpzero 2 learning_potential | sed 's/^lr = 0.3$/lr = 0/' >"$TMP/lpzero.ini"
"$SPADE" train "$TMP/lpzero.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q 'lpzero.ini: \[designer\] reward = learning_potential needs \[grpo\] lr > 0' "$TMP/out" && [ ! -d "$TMP/lpzero" ]; then
    ok "learning_potential with lr = 0 is refused, naming the fields"
else bad "learning_potential with lr = 0 is refused, naming the fields"; fi
# killed and resumed: the look-ahead draws nothing new, so the potentials come back the same
lpconfig lpstraight 5 learning_potential >"$TMP/lps.ini"
"$SPADE" train "$TMP/lps.ini" >"$TMP/out" 2>&1
lpconfig lpkilled 5 learning_potential >"$TMP/lpk.ini"
kill_points "$TMP/lpk.ini" "$TMP/lpkilled" written:0 plays:1 rewards:2 archive:3 state:4
strip "$TMP/lpstraight/train.jsonl" >"$TMP/a"
strip "$TMP/lpkilled/train.jsonl" >"$TMP/b"
if [ $kills -eq 5 ] && grep -q '"learning_potential":[0-9]' "$TMP/a" && cmp -s "$TMP/a" "$TMP/b"; then
    ok "learning_potential: killed at 5 named points and resumed = uninterrupted"
else diff "$TMP/a" "$TMP/b" >>"$TMP/out"; bad "learning_potential: killed at 5 named points ($kills landed; missed:$missed) and resumed = uninterrupted"; fi

# killed at every phase boundary of an iteration (core/killpoint.h: after the prompts, the
# designer's writing, the gates, the plays, the rewards, the update, inside the archive's
# transaction, after the log line, between checkpoint and state, between state and the unlink of
# the previous checkpoint), one a resume, and resumed: the same metrics and the same archive
config straight 10 files >"$TMP/straight.ini"
printf '[designer]\nhint = self\n' >>"$TMP/straight.ini"
"$SPADE" train "$TMP/straight.ini" >"$TMP/out" 2>&1
config killed 10 files >"$TMP/killed.ini"
printf '[designer]\nhint = self\n' >>"$TMP/killed.ini"
kill_points "$TMP/killed.ini" "$TMP/killed" prompts:0 written:1 gates:2 plays:3 rewards:4 update:5 archive:6 \
    logged:7 checkpoint:8 state:9
strip "$TMP/straight/train.jsonl" >"$TMP/a"
strip "$TMP/killed/train.jsonl" >"$TMP/b"
if [ $kills -eq 10 ] && cmp -s "$TMP/a" "$TMP/b"; then ok "killed at all 10 phase boundaries and resumed = uninterrupted, iteration by iteration"
else diff "$TMP/a" "$TMP/b" >>"$TMP/out"; bad "killed at 10 phase boundaries ($kills landed; missed:$missed) and resumed = uninterrupted"; fi
"$SPADE" archive list "$TMP/straight" >"$TMP/a" 2>&1
"$SPADE" archive list "$TMP/killed" >"$TMP/b" 2>&1
if cmp -s "$TMP/a" "$TMP/b"; then ok "the resumed archive equals the uninterrupted one"
else diff "$TMP/a" "$TMP/b" >"$TMP/out"; bad "the resumed archive equals the uninterrupted one"; fi
if [ "$(ls "$TMP/killed"/*.ckpt | wc -l)" -eq 1 ]; then ok "killed between state and unlink, resumed: one checkpoint is kept"
else ls "$TMP/killed" >"$TMP/out"; bad "killed between state and unlink, resumed: one checkpoint is kept"; fi
# and, as an extra, at random moments (looping until one kill landed)
config killedr 10 files >"$TMP/killedr.ini"
printf '[designer]\nhint = self\n' >>"$TMP/killedr.ini"
kill_random "$TMP/killedr.ini" "$TMP/killedr" 9
strip "$TMP/killedr/train.jsonl" >"$TMP/b"
"$SPADE" archive list "$TMP/killedr" >"$TMP/c" 2>&1
if [ $kills -ge 1 ] && cmp -s "$TMP/a" "$TMP/c" && strip "$TMP/straight/train.jsonl" | cmp -s - "$TMP/b"; then
    ok "killed at random moments ($kills landed) and resumed = uninterrupted, metrics and archive"
else diff "$TMP/a" "$TMP/c" >"$TMP/out"; bad "killed at random moments ($kills landed) and resumed = uninterrupted"; fi

# spade train with no argument: self-play on the pretrained model (SmolLM2, which ./bootstrap fetches),
# shrunk by SPADE_TRAIN_QUICK to one iteration of two short sources (on the cpu backend sampling at its
# file's Q4_1, [policy] sample_weights = q4_1); without the model it says it skipped
(cd "$TMP" && SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR=pretrained "$SPADE" train) >"$TMP/out" 2>&1
st=$?
if grep -q "SPADE_TRAIN_QUICK: skipped, no model" "$TMP/out"; then
    if [ $st -eq 0 ] && [ ! -e "$TMP/pretrained" ]; then
        ok "spade train (no argument) on the pretrained model # SKIP no smollm2-135m-instruct (./bootstrap fetches it)"
    else bad "spade train (no argument) with no model: it says so, exits 0 and writes nothing"; fi
elif [ $st -eq 0 ] && [ "$(wc -l <"$TMP/pretrained/train.jsonl")" -eq 1 ] &&
    grep -q "^model = smollm2-135m-instruct" "$TMP/pretrained/config.ini" &&
    grep -q "^source = policy" "$TMP/pretrained/config.ini" &&
    { ! grep -q "parameters on cpu," "$TMP/out" || grep -q "^sample_weights = q4_1" "$TMP/pretrained/config.ini"; } &&
    grep -q "The designer wrote 2 environments; [0-9]* passed every gate" "$TMP/out" &&
    grep -q "Run longer: raise \[run\] iterations" "$TMP/out" && grep -q "An iteration took [0-9]* s on average" "$TMP/out" &&
    ! grep -q "On the pool" "$TMP/out" && ! grep -q "pool_samples" "$TMP/pretrained/train.jsonl" &&
    times_ok "$TMP/pretrained/train.jsonl" 1; then
    ok "spade train (no argument) runs self-play on the pretrained model and says what happened and how to go on"
else bad "spade train (no argument): self-play on the pretrained model (exit $st)"; fi
# with no model in the model directory (SPADE_NO_MODEL=1 ./bootstrap), the quick run says it skipped, exit 0
mkdir -p "$TMP/nomodels"
(cd "$TMP" && SPADE_MODELS="$TMP/nomodels" SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR=skipped "$SPADE" train) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "SPADE_TRAIN_QUICK: skipped, no model to run on: .*spade model fetch smollm2-135m-instruct" "$TMP/out" &&
    [ ! -e "$TMP/skipped" ]; then
    ok "spade train (no argument, quick) with no model says it skipped and how to fetch it, exit 0, no run"
else bad "spade train (no argument, quick) with no model says it skipped and how to fetch it, exit 0, no run"; fi
# SPADE_TRAIN_MODEL names another model; a missing file is refused, naming it
(cd "$TMP" && SPADE_TRAIN_MODEL="$TMP/none.gguf" SPADE_TRAIN_DIR=nomodel "$SPADE" train) >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q "none.gguf: no such model file" "$TMP/out" && [ ! -e "$TMP/nomodel" ]; then
    ok "spade train with SPADE_TRAIN_MODEL naming no file refuses it, naming the file"
else bad "spade train with SPADE_TRAIN_MODEL naming no file refuses it, naming the file"; fi
# spade train --preset gpt: the from-scratch GPT (the default before), shrunk by SPADE_TRAIN_QUICK
(cd "$TMP" && SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR=default "$SPADE" train --preset gpt) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -s "$TMP/default/base/policy.ckpt" ] && [ "$(wc -l <"$TMP/default/train.jsonl")" -eq 2 ] &&
    grep -q "What happened" "$TMP/out" && grep -q "spade train default" "$TMP/out" &&
    grep -q "The designer wrote 8 environments; [0-9]* passed every gate" "$TMP/out" &&
    grep -q "pool_samples" "$TMP/default/train.jsonl"; then
    ok "spade train --preset gpt pretrains a base, runs self-play and says what happened and how to go on"
else bad "spade train --preset gpt: the from-scratch GPT"; fi
(cd "$TMP" && SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR=default "$SPADE" train --preset gpt) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "is complete (2 iterations)" "$TMP/out"; then ok "running the preset again says it is complete"
else bad "running the preset again says it is complete"; fi
"$SPADE" train --preset nope >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "the presets are gpt" "$TMP/out"; then ok "an unknown preset is refused, naming the presets"
else bad "an unknown preset is refused, naming the presets"; fi
# configs/default-fixed.ini, the fixed-pool baseline at the preset's compute, trains from the
# preset's base (its paths are relative to configs/: the tree's layout rebuilt in TMP, 2 iterations)
mkdir -p "$TMP/tree/configs" "$TMP/tree/runs"
ln -s "$SRC/stdenv" "$TMP/tree/stdenv"
ln -s "$TMP/default" "$TMP/tree/runs/default-gpt"
sed 's/^iterations = 30/iterations = 2/' "$SRC/configs/default-fixed.ini" >"$TMP/tree/configs/default-fixed.ini"
"$SPADE" train "$TMP/tree/configs/default-fixed.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/tree/runs/default-fixed/train.jsonl")" -eq 2 ] &&
    grep -q '"success"' "$TMP/tree/runs/default-fixed/train.jsonl"; then
    ok "configs/default-fixed.ini trains the fixed pool from the gpt preset's base"
else bad "configs/default-fixed.ini trains the fixed pool from the gpt preset's base"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
