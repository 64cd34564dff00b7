#!/bin/sh
# test_report.sh — `spade report RUN_DIR`, driven as a person would: on a
# micro self-play run (designer.source = files, 2 iterations, corpus off) it
# writes report.md and well-formed SVG plots, and its best/worst tables list
# real archive ids; nulls are gaps, not zeros; a half-written last line, a run
# of 1 iteration, a run with no valid environment, a fixed-pool run and an
# "eval" key are each handled; a directory that is not a run is refused by
# name. Not a test of how the plots look (a person looks at them).

NAME=report
. "${srcdir:-.}/tests/tap.sh"
check() { if [ "$1" = 0 ]; then ok "$2"; else bad "$2"; fi; }

# Well-formed XML: xmllint when there is one, else the shape our writer makes.
wellformed() {
    if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$1" 2>/dev/null; return; fi
    head -1 "$1" | grep -q '^<?xml ' && tail -1 "$1" | grep -q '^</svg>$' &&
        [ "$(grep -c '<svg ' "$1")" -eq 1 ] && ! grep -q '&[^a-z#]' "$1"
}

mkdir -p "$TMP/given" "$TMP/broken_only"
for f in carry_add modpow linear sequence; do cp "$SRC/stdenv/$f.c" "$TMP/given/"; done
cp "$SRC/tests/envs/gate_coin.c" "$TMP/given/zz_coin.c"
printf '#include <spade/dsl.h>\nENV("broken", "d")\nint x = ;\n' >"$TMP/given/broken.c"
cp "$TMP/given/broken.c" "$TMP/broken_only/broken.c"
config() { # config DIR ITERATIONS FILES_DIR
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
source = files
files = $3
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

# the micro self-play run, reported as docs/cli.md shows it
mkdir -p "$TMP/runs"
config runs/default 2 given >"$TMP/micro.ini"
"$SPADE" train "$TMP/micro.ini" >"$TMP/out" 2>&1 || { bad "the micro self-play run finishes"; echo "1..$n"; exit 1; }
RUN="$TMP/runs/default"
(cd "$TMP" && "$SPADE" report runs/default) >"$TMP/out" 2>&1
st=$?
R="$RUN/report"
missing=0
for f in report.md validity.svg pass.svg regret.svg designer_reward.svg vendi.svg time.svg regret_hist.svg; do
    [ -s "$R/$f" ] || missing=$((missing + 1))
done
[ $st -eq 0 ] && [ $missing -eq 0 ] && grep -q "report.md" "$TMP/out"; check $? "spade report writes report.md and the plots into RUN/report"
badxml=0
for f in "$R"/*.svg; do wellformed "$f" || badxml=$((badxml + 1)); done
[ $badxml -eq 0 ]; check $? "every SVG is well-formed XML"
grep -q 'designer prefill' "$R/time.svg" && grep -q 'designer decoding' "$R/time.svg"
check $? "the time plot splits the designer's prefill from its decoding (train.jsonl's time_s)"
nolink=0
for f in $(grep -o '([a-z_]*\.svg)' "$R/report.md" | tr -d '()'); do [ -s "$R/$f" ] || nolink=$((nolink + 1)); done
[ $nolink -eq 0 ] && [ "$(grep -c '\.svg)' "$R/report.md")" -ge 7 ]; check $? "report.md links the plots it wrote, and only those"
grep -q '| failed compile | 1 |' "$R/report.md" && grep -q '| valid | 4 |' "$R/report.md"
check $? "the validity table counts the environments by their first failed gate"
"$SPADE" archive list "$RUN" --valid | awk 'NR > 1 {print $1}' | sort >"$TMP/valid_ids"
sed -n '/^### Highest regret/,/^### Lowest regret/p' "$R/report.md" | awk -F'|' '$2 ~ /^ [0-9]+ $/ {gsub(/ /, "", $2); print $2}' |
    sort >"$TMP/table_ids"
[ -s "$TMP/table_ids" ] && [ -z "$(comm -23 "$TMP/table_ids" "$TMP/valid_ids")" ]
check $? "the best-environments table lists real ids of valid archived environments"
id=$(head -1 "$TMP/table_ids")
"$SPADE" archive show "$RUN" "$id" >"$TMP/out" 2>&1 && grep -q "^id $id " "$TMP/out" && grep -q "spade archive show" "$R/report.md"
check $? "an id from the table opens with spade archive show"
# the whole run's Vendi score: the 4 valid environments are the 4 given stdenv files
mkdir -p "$TMP/four"
for f in carry_add modpow linear sequence; do cp "$SRC/stdenv/$f.c" "$TMP/four/"; done
v=$("$SPADE" vendi "$TMP/four" | awk '/^n 4 vendi/ {printf "%.2f", $4}')
[ -n "$v" ] && grep -q "the 4 valid environments of the archive have a Vendi score of $v," "$R/report.md"
check $? "the whole run's Vendi score is spade vendi's over its valid sources ($v)"
grep -q '| Vendi / n within one iteration |' "$R/report.md" && grep -q 'Vendi/n over the whole run: the 4' "$R/report.md" &&
    grep -q 'Two figures, two sets' "$R/report.md"
check $? "the report labels which Vendi/n is within an iteration and which is over the whole run"
grep -q 'No plot: no line of `train.jsonl` has an `"eval"` key' "$R/report.md" && [ ! -e "$R/heldout.svg" ]
check $? "no \"eval\" key: no held-out plot, and the report says so"

# --out, nulls as gaps, an eval key, a half-written last line
cp -r "$RUN" "$TMP/edited" && rm -rf "$TMP/edited/report"
line=$(head -1 "$RUN/train.jsonl")
: >"$TMP/edited/train.jsonl"
for i in 0 1 2 3 4; do
    if [ $i -eq 2 ]; then
        echo "$line" | sed "s/\"iteration\":0/\"iteration\":$i/; s/\"pass\":[^,]*/\"pass\":null/; s/\"pass_hint\":[^,]*/\"pass_hint\":null/"
    else
        echo "$line" | sed "s/\"iteration\":0/\"iteration\":$i/; s/}\$/,\"eval\":{\"success\":0.$i}}/"
    fi
done >>"$TMP/edited/train.jsonl"
printf '{"iteration":5,"written":3,"val' >>"$TMP/edited/train.jsonl"
"$SPADE" report "$TMP/edited" --out "$TMP/edited_report" >"$TMP/out" 2>&1
st=$?
[ $st -eq 0 ] && [ -s "$TMP/edited_report/report.md" ] && [ ! -e "$TMP/edited/report/report.md" ]; check $? "--out DIR writes there"
[ "$(grep -c '<polyline fill=' "$TMP/edited_report/pass.svg")" -eq 4 ]; check $? "a null is a gap: each pass-rate line breaks in two"
grep -q '| pass rate without the hint | .* | 4 of 5 |' "$TMP/edited_report/report.md"; check $? "the summary counts iterations with a value"
grep -q "edited/train.jsonl:6: the last line is half written" "$TMP/out" && grep -q 'Warning:.*half written' "$TMP/edited_report/report.md"
check $? "a half-written last line (a killed run) is skipped, named by file and line"
wellformed "$TMP/edited_report/heldout.svg" && grep -q '!\[held-out success\](heldout.svg)' "$TMP/edited_report/report.md"
check $? "an \"eval\" key gives the held-out plot"
printf '{"env":"x","episodes":4}\n{"summary":true,"envs":3,"policy":0.25,"hint":0.5,"random":0.125,"solve":1}\n' >"$TMP/edited/heldout.jsonl"
"$SPADE" report "$TMP/edited" --out "$TMP/edited_report" >"$TMP/out" 2>&1
grep -q '| heldout.jsonl | 3 | 0.250 | 0.500 | 0.125 | 1.000 |' "$TMP/edited_report/report.md"
check $? "an eval JSONL file in the run directory is summarised"

# spade train's [eval] lines ({"iteration":k,"eval":{...}} after iteration k's metrics) add to that iteration
mkdir -p "$TMP/evalrun"
printf '%s\n' '{"iteration":0,"success":0.25,"mean_return":0.25,"loss":0.1,"updated":true}' \
    '{"iteration":0,"eval":{"suite":"heldout","episodes":2,"per_env":{"a":0.5},"success":0.5}}' \
    '{"iteration":1,"success":0.5,"mean_return":0.5,"loss":0.2,"updated":true}' \
    '{"iteration":1,"eval":{"suite":"heldout","episodes":2,"per_env":{"a":0.75},"success":0.75}}' >"$TMP/evalrun/train.jsonl"
"$SPADE" report "$TMP/evalrun" >"$TMP/out" 2>&1 && grep -q '^| success | 0.500 | 0.375 | 0.250 | 0.500 | 2 of 2 |' "$TMP/evalrun/report/report.md" &&
    grep -q '^| held-out success | 0.750 | 0.625 | 0.500 | 0.750 | 2 of 2 |' "$TMP/evalrun/report/report.md"
check $? "an eval line joins its iteration's metrics instead of replacing them"

# one iteration
mkdir -p "$TMP/one"
head -1 "$RUN/train.jsonl" >"$TMP/one/train.jsonl"
cp "$RUN/spade.db" "$TMP/one/"
"$SPADE" report "$TMP/one" >"$TMP/out" 2>&1 && wellformed "$TMP/one/report/validity.svg" && wellformed "$TMP/one/report/pass.svg" &&
    grep -q '1 iteration in' "$TMP/one/report/report.md"
check $? "a run of one iteration"

# no valid environment
config nothing 2 broken_only >"$TMP/nothing.ini"
"$SPADE" train "$TMP/nothing.ini" >"$TMP/out" 2>&1
"$SPADE" report "$TMP/nothing" >"$TMP/out" 2>&1 && grep -q 'none is valid' "$TMP/nothing/report/report.md" &&
    grep -q 'no values in this run' "$TMP/nothing/report/regret.svg" && [ ! -e "$TMP/nothing/report/regret_hist.svg" ] &&
    wellformed "$TMP/nothing/report/validity.svg"
check $? "a run with no valid environment: empty plots say so, no histogram"

# a fixed-pool run: success and loss, no archive
mkdir -p "$TMP/pool"
cp "$SRC/tests/envs/digit_first.c" "$TMP/pool/"
printf '[run]\ndir = fixed\niterations = 2\nseed = 5\n[policy]\nlayers = 1\nheads = 2\nwidth = 32\ncontext = 96\n[pool]\nenvs = carry_add:digits=1\ndirs = pool\n[agent]\nenvs = 8\nplays = 8\nmax_action_tokens = 6\n[designer]\nenabled = false\n' >"$TMP/fixed.ini"
"$SPADE" train "$TMP/fixed.ini" >"$TMP/out" 2>&1
"$SPADE" report "$TMP/fixed" >"$TMP/out" 2>&1 && wellformed "$TMP/fixed/report/success.svg" && wellformed "$TMP/fixed/report/loss.svg" &&
    grep -q 'digit_first' "$TMP/fixed/report/success.svg" && grep -q 'Fixed-pool run' "$TMP/fixed/report/report.md" &&
    grep -q 'No archive' "$TMP/fixed/report/report.md" && [ ! -e "$TMP/fixed/report/validity.svg" ]
check $? "a fixed-pool run: success per environment and loss, no archive"

# not a run
mkdir -p "$TMP/notrun"
"$SPADE" report "$TMP/notrun" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "notrun: not a run directory (no train.jsonl" "$TMP/out"; check $? "a directory that is not a run is refused by name"
"$SPADE" report "$TMP/micro.ini" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "micro.ini: not a directory" "$TMP/out"; check $? "a file is refused: not a directory"
"$SPADE" report "$TMP/nowhere" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "nowhere: No such file" "$TMP/out"; check $? "a missing directory is refused by name"
: >"$TMP/notrun/train.jsonl"
"$SPADE" report "$TMP/notrun" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "train.jsonl: no complete iteration yet" "$TMP/out"; check $? "an empty log: nothing to report, said so"
"$SPADE" report >"$TMP/out" 2>&1
[ $? -eq 2 ]; check $? "no argument is a usage error"

echo "1..$n"
[ "$fails" -eq 0 ]
