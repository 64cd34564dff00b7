#!/bin/sh
# test_template.sh — `spade train` with [designer] source = template, driven
# as a person would: a 2-iteration micro run whose policy (from scratch)
# fills the holes of tests/envs/tmpl_mark.c finishes, archives the filled
# sources (no @@ left) with their gate outcomes, and trains the designer on
# its hole tokens when the rewards differ; the config errors name the file
# (and the token counts when a template does not fit the context); the
# shipped templates/cups.c, filled with known values, passes `spade check`
# and `spade check --gates`, and a filling that makes it a giveaway fails the
# random-agent gate; configs/default-template.ini runs from the gpt
# preset's base (spade train --preset gpt; 2 iterations, the tree's layout rebuilt in TMP).
# Not a test of learning (a micro run learns nothing in 2 iterations).

NAME=template
. "${srcdir:-.}/tests/tap.sh"

cp "$SRC/tests/envs/tmpl_mark.c" "$TMP/mark.c"
printf '#include <spade/dsl.h>\nint broken = ; // @@\n' >"$TMP/broken.c"
config() { # config DIR [extra lines on stdin appended]
    cat <<EOF2
[run]
dir = $1
iterations = 2
seed = 4
[policy]
layers = 1
heads = 2
width = 32
context = 1024
[designer]
enabled = true
envs = 3
source = template
template = mark.c
hole_tokens = 6
max_step_ms = 200
gate_seeds = 10
[selfplay]
plays = 4
[agent]
max_action_tokens = 6
EOF2
}

# the micro run
config micro >"$TMP/micro.ini"
"$SPADE" train "$TMP/micro.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/micro/train.jsonl")" -eq 2 ] && [ "$(grep -c '"written":3,' "$TMP/micro/train.jsonl")" -eq 2 ]; then
    ok "a 2-iteration micro run with designer.source = template finishes"
else bad "a 2-iteration micro run with designer.source = template finishes"; fi
"$SPADE" archive list "$TMP/micro" >"$TMP/list" 2>&1
n_envs=$(grep -c ' test ' "$TMP/list")
n_valid=$(grep -c ' valid ' "$TMP/list")
if [ "$n_envs" -eq 6 ] && [ "$n_valid" -ge 1 ] && [ "$n_valid" -lt 6 ]; then
    ok "the archive has the 6 filled sources, valid and not ($n_valid valid)"
else cp "$TMP/list" "$TMP/out"; bad "the archive has the 6 filled sources, valid and not"; fi
"$SPADE" archive show "$TMP/micro" 1 >"$TMP/out" 2>&1
if grep -aq '^#define NOTE ' "$TMP/out" && grep -aq '^// a note: ' "$TMP/out" && ! grep -aq '@@' "$TMP/out" &&
    grep -aq 'corpus item mark.c' "$TMP/out"; then
    ok "an archived source is the template with its holes filled"
else bad "an archived source is the template with its holes filled"; fi
# the designer trains on its hole tokens in an iteration whose rewards differ, and only then
if grep -q '"designer_samples":[1-9]' "$TMP/micro/train.jsonl" && grep -q '"grad_norm_designer":[1-9]' "$TMP/micro/train.jsonl"; then
    ok "the designer gets samples in the update (designer_samples > 0)"
else cp "$TMP/micro/train.jsonl" "$TMP/out"; bad "the designer gets samples in the update"; fi
# Vendi/n of the games the fillings set, beside the fillings' own: a number exactly when vendi_n is one
if sed 's/.*"vendi_n":\([^,]*\),.*"vendi_n_games":\([^,]*\),.*/\1 \2/' "$TMP/micro/train.jsonl" |
    awk '($1 == "null") != ($2 == "null") || ($2 != "null" && ($2 <= 0 || $2 > 1)) { bad = 1 } END { exit bad }' &&
    grep -q '"vendi_n_games":[0-9]' "$TMP/micro/train.jsonl"; then
    ok "vendi_n_games: Vendi/n of the games, in (0, 1] where there is something valid"
else cp "$TMP/micro/train.jsonl" "$TMP/out"; bad "vendi_n_games: Vendi/n of the games"; fi
config broken | sed 's/^template = mark.c/template = broken.c/' >"$TMP/broken.ini"
"$SPADE" train "$TMP/broken.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '"written":3,"valid":0,.*"designer_samples":0,' "$TMP/broken/train.jsonl")" -eq 2 ]; then
    ok "every filling invalid (equal rewards): the designer gets no sample"
else bad "every filling invalid (equal rewards): the designer gets no sample"; fi
# source tokens are the hole tokens: at most envs x holes x hole_tokens an iteration
if ! grep -q '"source_tokens":\([4-9][0-9]\|[1-9][0-9][0-9]\)' "$TMP/micro/train.jsonl" && grep -q '"source_tokens":[1-9]' "$TMP/micro/train.jsonl"; then
    ok "only hole tokens are sampled (at most 3 x 2 x 6 an iteration)"
else cp "$TMP/micro/train.jsonl" "$TMP/out"; bad "only hole tokens are sampled"; fi
# resume: the run is complete and says so
"$SPADE" train "$TMP/micro" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && grep -q "is complete (2 iterations)" "$TMP/out"; then ok "the template run resumes (complete)"; else bad "the template run resumes"; fi

# two templates rotate over the slots (a comma-separated list, like designer.source = files rotates files)
config rot | sed 's/^template = mark.c/template = mark.c, broken.c/; s/^iterations = 2/iterations = 1/' >"$TMP/rot.ini"
"$SPADE" train "$TMP/rot.ini" >"$TMP/out" 2>&1
st=$?
items=$(for i in 1 2 3; do "$SPADE" archive show "$TMP/rot" $i | sed -n 's/.*corpus item \([^ ]*\).*/\1/p'; done | tr '\n' ' ')
if [ $st -eq 0 ] && [ "$items" = "mark.c broken.c mark.c " ]; then ok "templates rotate over slots"
else echo "# items: $items" >>"$TMP/out"; bad "templates rotate over slots"; fi

# a run stopped after iteration 0 and resumed lands on the uninterrupted run's metrics and fillings
strip() { sed 's/,"t_design".*}$/}/' "$1"; }
config split | sed 's/^iterations = 2/iterations = 1/' >"$TMP/split.ini"
"$SPADE" train "$TMP/split.ini" >"$TMP/out" 2>&1 && sed -i 's/^iterations = 1/iterations = 2/' "$TMP/split/config.ini" &&
    "$SPADE" train "$TMP/split" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(strip "$TMP/split/train.jsonl")" = "$(strip "$TMP/micro/train.jsonl")" ] &&
    [ "$("$SPADE" archive show "$TMP/split" 5 | tail -n +2)" = "$("$SPADE" archive show "$TMP/micro" 5 | tail -n +2)" ]; then
    ok "a resumed template run fills and measures what the uninterrupted one did"
else bad "a resumed template run fills and measures what the uninterrupted one did"; fi

# config errors, by name
printf '[designer]\nenabled = true\nsource = template\n' >"$TMP/e1.ini"
"$SPADE" train "$TMP/e1.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q 'e1.ini: \[designer\] source = template needs template = FILE' "$TMP/out"; then
    ok "source = template without a template is refused"
else bad "source = template without a template is refused"; fi
printf '[designer]\nenabled = true\nsource = template\ntemplate = nowhere.c\n' >"$TMP/e2.ini"
"$SPADE" train "$TMP/e2.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "nowhere.c" "$TMP/out"; then ok "an unreadable template is refused by name"
else bad "an unreadable template is refused by name"; fi
printf '#include <spade/dsl.h>\nENV("x", "no holes")\n' >"$TMP/noholes.c"
printf '[designer]\nenabled = true\nsource = template\ntemplate = mark.c, noholes.c\n' >"$TMP/e3.ini"
"$SPADE" train "$TMP/e3.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "noholes.c: no hole" "$TMP/out"; then ok "a template without @@ is refused by name"
else bad "a template without @@ is refused by name"; fi
printf 'int a = 1;\nint b = @@@;\n' >"$TMP/three.c"
printf '[designer]\nenabled = true\nsource = template\ntemplate = three.c\n' >"$TMP/e4.ini"
"$SPADE" train "$TMP/e4.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "three.c:2: \"@@@\"" "$TMP/out"; then ok "an ambiguous hole is refused by file and line"
else bad "an ambiguous hole is refused by file and line"; fi
config toolong | sed 's/^context = 1024/context = 256/' >"$TMP/e5.ini"
"$SPADE" train "$TMP/e5.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "template = .*mark.c: [0-9]* tokens of template text + 2 holes x designer.hole_tokens 6 .* over the policy's context of 256" "$TMP/out" &&
    [ ! -s "$TMP/toolong/train.jsonl" ]; then
    ok "a template that cannot fit the context is refused, with the token counts"
else bad "a template that cannot fit the context is refused, with the token counts"; fi
printf '[designer]\nenabled = true\nsource = templates\n' >"$TMP/e6.ini"
"$SPADE" train "$TMP/e6.ini" >"$TMP/out" 2>&1
if [ $? -eq 2 ] && grep -q "e6.ini:3: \[designer\] source = 'templates': expected policy, files, template or remote" "$TMP/out"; then
    ok "a bad designer.source names file, line and value"
else bad "a bad designer.source names file, line and value"; fi

# the shipped template, filled with known values
fill() { sed "s/^static const char CUPS\[\] = \"cups = @@/&$1/; s/^static const char TRIES\[\] = \"tries = @@/&$2/; s/@@//" "$SRC/templates/cups.c"; }
fill 6 4 >"$TMP/cups.c"
if ! grep -q '@@' "$TMP/cups.c" && grep -q '"cups = 6\\$' "$TMP/cups.c" && "$SPADE" check "$TMP/cups.c" >"$TMP/out" 2>&1 &&
    grep -q ' 0 failed' "$TMP/out"; then
    ok "templates/cups.c filled (6 cups, 4 tries) passes spade check"
else bad "templates/cups.c filled passes spade check"; fi
"$SPADE" check --gates "$TMP/cups.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '^PASS ' "$TMP/out")" -eq 13 ]; then ok "templates/cups.c filled passes every gate"
else bad "templates/cups.c filled passes every gate"; fi
fill 'one: 1' 'thirty, 30' >"$TMP/giveaway.c"
"$SPADE" check --gates "$TMP/giveaway.c" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q '^FAIL random_agent: ' "$TMP/out"; then ok "one cup and thirty tries fails the random-agent gate"
else bad "one cup and thirty tries fails the random-agent gate"; fi
fill 'twenty 20' '3' >"$TMP/hopeless.c"
"$SPADE" check --gates "$TMP/hopeless.c" >"$TMP/out" 2>&1
if [ $? -eq 1 ] && grep -q '^FAIL solve: ' "$TMP/out"; then ok "twenty cups and three tries fails the solve gate"
else bad "twenty cups and three tries fails the solve gate"; fi

# configs/default-template.ini from the gpt preset's base (quick), in the tree's layout
(cd "$TMP" && SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR=default "$SPADE" train --preset gpt) >"$TMP/out" 2>&1
mkdir -p "$TMP/tree/configs" "$TMP/tree/runs"
ln -s "$TMP/default" "$TMP/tree/runs/default-gpt"
ln -s "$SRC/templates" "$TMP/tree/templates"
ln -s "$SRC/stdenv" "$TMP/tree/stdenv"
sed 's/^iterations = 30/iterations = 2/' "$SRC/configs/default-template.ini" >"$TMP/tree/configs/default-template.ini"
"$SPADE" train "$TMP/tree/configs/default-template.ini" >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(wc -l <"$TMP/tree/runs/default-template/train.jsonl")" -eq 2 ] &&
    [ "$(grep -c '"written":8,' "$TMP/tree/runs/default-template/train.jsonl")" -eq 2 ]; then
    ok "configs/default-template.ini fills templates/cups.c from the gpt preset's base (it fits its context)"
else bad "configs/default-template.ini fills templates/cups.c from the gpt preset's base"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
