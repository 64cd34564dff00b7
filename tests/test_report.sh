#!/bin/sh
# test_report.sh — `spade report RUN_DIR`, driven as a person would: on a
# micro self-play run (designer.source = files, 2 iterations, corpus off) it
# writes report.md and well-formed SVG plots, and its best/worst tables list
# real archive ids; nulls are gaps, not zeros; a half-written last line, a run
# of 1 iteration, a run with no valid environment, a fixed-pool run and an
# "eval" key are each handled; a directory that is not a run is refused by
# name. `spade report --compare` on two arms of two template-designer runs:
# pooled counts are the sums of the runs' own, means are over runs with an
# interval only from 2 runs, the run-so-far Vendi/n is spade vendi's, held-out
# success comes from "eval" lines, the 5,000-environment cap on the run so far
# leaves a capped run's figure out and says so, and a missing run, unequal
# lengths and a torn last line are said.
# Not a test of how the plots look (a person looks at them).

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


# --compare: two arms of 2 runs each, the template designer (seconds), trained (seeds 1, 2) and frozen
# (designer.train = false, seeds 3, 4: other seeds, so that a mix-up of the arms shows in the counts)
cp "$SRC/tests/envs/tmpl_mark.c" "$TMP/mark.c"
tconfig() { # tconfig DIR SEED ITERATIONS [train = false]
    printf '[run]\ndir = %s\niterations = %s\nseed = %s\n[policy]\nlayers = 1\nheads = 2\nwidth = 32\ncontext = 1024\n' "$1" "$3" "$2"
    printf '[designer]\nenabled = true\nenvs = 3\nsource = template\ntemplate = mark.c\nhole_tokens = 6\nmax_step_ms = 200\ngate_seeds = 10\n%s\n' "$4"
    printf '[selfplay]\nplays = 4\n[agent]\nmax_action_tokens = 6\n'
}
trained=ok
for s in 1 2 3 4; do
    if [ $s -le 2 ]; then tconfig cmp/t$s $s 4 >"$TMP/c$s.ini"; else tconfig cmp/f$s $s 4 'train = false' >"$TMP/c$s.ini"; fi
    (cd "$TMP" && "$SPADE" train "c$s.ini") >"$TMP/out" 2>&1 || trained=
done
[ -n "$trained" ]; check $? "four template-designer runs for the comparison finish"
C="$TMP/cmp"
(cd "$TMP" && "$SPADE" report --compare trained=cmp/t1,cmp/t2 frozen=cmp/f3,cmp/f4 --out cmp/report --last 2) >"$TMP/out" 2>&1
st=$?
M="$C/report/compare.md"
badxml=0
for f in "$C"/report/*.svg; do wellformed "$f" || badxml=$((badxml + 1)); done
[ $st -eq 0 ] && [ -s "$M" ] && [ -s "$C/report/validity.svg" ] && [ -s "$C/report/nearcopies.svg" ] && [ $badxml -eq 0 ] &&
    grep -q 'trained' "$C/report/regret.svg" && grep -q 'frozen' "$C/report/regret.svg"
check $? "spade report --compare writes compare.md and well-formed plots that overlay both arms"
# a key's value in line LINE of a train.jsonl: jkey FILE LINE KEY
jkey() { sed -n "$2p" "$1" | sed "s/.*\"$3\":\([^,}]*\).*/\1/"; }
pooled=0
for it in 0 1 2 3; do
    l=$((it + 1))
    for arm in "trained t1 t2" "frozen f3 f4"; do
        set -- $arm
        k=$(($(jkey "$C/$2/train.jsonl" $l valid) + $(jkey "$C/$3/train.jsonl" $l valid)))
        w=$(($(jkey "$C/$2/train.jsonl" $l written) + $(jkey "$C/$3/train.jsonl" $l written)))
        c=$(($(jkey "$C/$2/train.jsonl" $l compile) + $(jkey "$C/$3/train.jsonl" $l compile)))
        sed -n "/^### $1: validity by gate/,/^###/p" "$M" | grep -q "^| $it | $w | $k/$w = [0-9.]* \[[0-9.]*, [0-9.]*\] | $c/$w = " ||
            pooled=$((pooled + 1))
    done
done
[ $pooled -eq 0 ]; check $? "each arm's valid and compile counts per iteration are the sums of its runs' train.jsonl counts"
k=0 w=0
for r in t1 t2; do for l in 3 4; do
    k=$((k + $(jkey "$C/$r/train.jsonl" $l valid))) w=$((w + $(jkey "$C/$r/train.jsonl" $l written)))
done; done
grep -q "^## Over the last 2 iterations (2 to 3)" "$M" && grep -q "^| valid share | $k/$w = " "$M"
check $? "the summary pools the valid counts of the last K = 2 iterations ($k/$w)"
want=$(for r in t1 t2; do jkey "$C/$r/train.jsonl" 1 designer_reward; done | awk '{ s += $1 } END { printf "%.3f", s / 2 }')
sed -n '/^### designer reward/,/^###/p' "$M" | grep -q "^| 0 | $want \[[-0-9.]*, [-0-9.]*\] (2) |"
check $? "a mean over an arm's 2 runs, with an interval across them ($want)"
secs=$(for r in t1 t2; do jkey "$C/$r/train.jsonl" 2 total; done | awk '{ s += $1 } END { printf "%.3f", s / 2 }')
sed -n '/^### seconds an iteration/,/^###/p' "$M" | grep -q "^| 1 | $secs \[[-0-9.]*, [-0-9.]*\] (2) |" && [ -s "$C/report/time.svg" ]
check $? "the seconds an iteration took (time_s.total), the check of equal compute ($secs)"
# one run in an arm: a value, no interval; the difference has none either
(cd "$TMP" && "$SPADE" report --compare solo=cmp/t1 frozen=cmp/f3,cmp/f4 --out cmp/solo) >"$TMP/out" 2>&1 &&
    grep -q '^| designer reward | [-0-9.]* (1) | [-0-9.]* \[.*\] (2) | [-+0-9.]* (no interval) |' "$C/solo/compare.md" &&
    ! sed -n '/^### designer reward/,/^###/p' "$C/solo/compare.md" | grep -q '^| 0 | [-0-9.]* \['
check $? "an arm of one run has no interval, and neither has its difference"
# the run so far: by the embedding the loop stored with each valid environment, which for written
# sources (the micro run's files designer) is spade vendi's; at the last iteration, all 4 of them
vn=$("$SPADE" vendi "$TMP/four" | awk '/^n 4 vendi/ {printf "%.3f", $4 / 4}')
(cd "$TMP" && "$SPADE" report --compare files=runs/default --out cmp/files) >"$TMP/out" 2>&1 &&
    sed -n '/^### Vendi\/n of the run so far/,/^###/p' "$C/files/compare.md" | grep -q "^| 1 | $vn (1) |" &&
    ! sed -n '/^### Vendi\/n of the run so far/,/^###/p' "$C/files/compare.md" | grep -q "^| 0 | $vn (1) |"
check $? "Vendi/n of the run so far, at its last iteration, is spade vendi's over the run's valid sources ($vn)"
# the cap on the run so far (MAX_CUM_ENVS, 5,000 valid environments): the first ones by iteration are
# kept and a figure is shown only where the run's whole set fits, a capped run says so (compare.md and
# stderr) and its summary cell is a dash, not an earlier iteration's figure. The shipped cap on an
# archive padded with copies of a valid environment to 5,001 (python3's sqlite3; no Vendi over 5,000
# is computed, so it takes a fraction of a second), the boundary and iteration 0 by the testing knob.
V="/^### Vendi\/n of the run so far/,/^###/p"
c0=$(db_count() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }
    db_count "$RUN/spade.db" "select count(*) from envs where gate = '' and iteration = 0" 2>/dev/null)
if [ -n "$c0" ]; then
    cp -r "$RUN" "$TMP/runs/big"
    python3 -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
cols = ",".join(r[1] for r in c.execute("pragma table_info(envs)") if r[1] != "id")
(n,) = c.execute("select count(*) from envs where gate = \x27\x27").fetchone()
(one,) = c.execute("select min(id) from envs where gate = \x27\x27 and iteration = 1").fetchone()
c.execute("with recursive k(i) as (select 1 union all select i + 1 from k where i < ?) insert into envs(%s) "
          "select %s from envs, k where envs.id = ?" % (cols, cols), (5001 - n, one))
c.commit()' "$TMP/runs/big/spade.db"
    v0=$(sed -n "$V" "$C/files/compare.md" | sed -n 's/^| 0 | \([0-9.]*\) (1) |$/\1/p')
    (cd "$TMP" && "$SPADE" report --compare big=runs/big files=runs/default --out cmp/big) >"$TMP/out" 2>&1 &&
        grep -q "warning: runs/big has more than 5000 valid environments from iteration 1 on" "$TMP/out" &&
        grep -q '^> \*\*Capped:\*\* `runs/big` has more than 5000 valid environments from iteration 1 on' "$C/big/compare.md" &&
        ! grep -q 'Capped:.*runs/default' "$C/big/compare.md" &&
        sed -n "$V" "$C/big/compare.md" | grep -q "^| 0 | $v0 (1) | $v0 (1) |$" &&
        sed -n "$V" "$C/big/compare.md" | grep -q "^| 1 | – | $vn (1) |$" &&
        grep -q "^| Vendi/n of the run so far | – | $vn (1) | – |$" "$C/big/compare.md"
    check $? "past the 5,000-environment cap the run so far is a dash from that iteration on, said, and not summarised"
    cap() { (cd "$TMP" && SPADE_COMPARE_MAX_ENVS=$1 "$SPADE" report --compare files=runs/default --out cmp/cap$1) >"$TMP/out" 2>&1; }
    cap 4 && ! grep -q 'Capped' "$C/cap4/compare.md" && sed -n "$V" "$C/cap4/compare.md" | grep -q "^| 1 | $vn (1) |$" &&
        cap 3 && grep -q 'Capped:.* more than 3 valid environments from iteration 1 on.*lowered by SPADE_COMPARE_MAX_ENVS' "$C/cap3/compare.md" &&
        sed -n "$V" "$C/cap3/compare.md" | grep -q "^| 0 | $v0 (1) |$" && ! sed -n "$V" "$C/cap3/compare.md" | grep -q '^| 1 |' &&
        cap "$c0" && grep -q "Capped:.* from iteration 1 on" "$C/cap$c0/compare.md" && sed -n "$V" "$C/cap$c0/compare.md" | grep -q "^| 0 | $v0 (1) |$" &&
        cap 1 && grep -q 'Capped:.* more than 1 valid environments from iteration 0 on' "$C/cap1/compare.md" &&
        ! grep -q '^### Vendi/n of the run so far' "$C/cap1/compare.md"
    check $? "exactly at the cap (SPADE_COMPARE_MAX_ENVS=4, the run's 4; $c0, iteration 0's) is computed; one over is capped, at iteration 0 too"
else
    ok "# SKIP the cap on the run so far: no python3 sqlite3 to pad an archive"
    ok "# SKIP the cap at its boundary: no python3 sqlite3"
fi
# held-out success, when the runs' train.jsonl has "eval" lines: at the iterations that have one
for r in t1 t2; do
    cp -r "$C/$r" "$C/${r}eval"
    printf '{"iteration":1,"eval":{"suite":"heldout","episodes":4,"success":0.%s}}\n' "${r#t}" >>"$C/${r}eval/train.jsonl"
done
(cd "$TMP" && "$SPADE" report --compare evaluated=cmp/t1eval,cmp/t2eval frozen=cmp/f3,cmp/f4 --out cmp/eval) >"$TMP/out" 2>&1 &&
    wellformed "$C/eval/heldout.svg" && sed -n '/^### held-out success/,/^### seconds/p' "$C/eval/compare.md" | grep -q '^| 1 | 0.150 \[.*\] (2) | – |' &&
    [ "$(sed -n '/^### held-out success/,/^### seconds/p' "$C/eval/compare.md" | grep -c '^| [0-9]')" -eq 1 ] &&
    grep -q 'No held-out success' "$C/report/compare.md" && [ ! -e "$C/report/heldout.svg" ]
check $? "held-out success from \"eval\" lines, at the iterations that have one; none without"
# errors and warnings as the one-run report gives them
(cd "$TMP" && "$SPADE" report --compare trained=cmp/t1,cmp/nowhere frozen=cmp/f3) >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "cmp/nowhere (arm trained): No such file" "$TMP/out"; check $? "a missing run directory is an error naming it and its arm"
mkdir -p "$C/notrun"
(cd "$TMP" && "$SPADE" report --compare trained=cmp/t1 frozen=cmp/notrun) >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "cmp/notrun (arm frozen): not a run directory (no train.jsonl" "$TMP/out"; check $? "a directory that is not a run is refused by name"
(cd "$TMP" && "$SPADE" report --compare cmp/t1) >"$TMP/out" 2>&1
[ $? -eq 2 ] && grep -q "an arm is NAME=RUN" "$TMP/out"; check $? "an argument without NAME= is a usage error"
cp -r "$C/f4" "$C/f4short"
head -2 "$C/f4/train.jsonl" >"$C/f4short/train.jsonl"
printf '{"iteration":2,"written":3,"val' >>"$C/f4short/train.jsonl"
(cd "$TMP" && "$SPADE" report --compare trained=cmp/t1,cmp/t2 frozen=cmp/f3,cmp/f4short --out cmp/short) >"$TMP/out" 2>&1 &&
    grep -q "f4short/train.jsonl:3: the last line is half written" "$TMP/out" &&
    grep -q 'Warning:.*f4short/train.jsonl:3: the last line is half written' "$C/short/compare.md" &&
    grep -q 'Compared over the 2 iterations every run has (0 to 1); \*\*the runs are of unequal length' "$C/short/compare.md" &&
    ! grep -q '^| 2 |' "$C/short/compare.md"
check $? "runs of unequal length compare over the iterations all have, and a half-written last line is said"

# configs/compare-arms.sh runs a study on: given more iterations, the runs already in DIR are resumed
# to them (not started again), SEED_LIST/ARMS pick which, and another config there is refused.
A="$TMP/arms"
sh "$SRC/configs/compare-arms.sh" 1 1 "$A" "$SPADE" >"$TMP/out" 2>&1 &&
    SEED_LIST=1 ARMS=frozen sh "$SRC/configs/compare-arms.sh" 2 1 "$A" "$SPADE" >>"$TMP/out" 2>&1 &&
    [ "$(wc -l <"$A/frozen-1/train.jsonl")" -eq 2 ] && [ "$(wc -l <"$A/trained-1/train.jsonl")" -eq 1 ] &&
    grep -q '^iterations = 2$' "$A/frozen-1/config.ini" && grep -q 'resuming' "$A/frozen-1.log"
check $? "compare-arms.sh given more iterations resumes the chosen arm's run to them, and leaves the other"
ENVS=3 sh "$SRC/configs/compare-arms.sh" 3 1 "$A" "$SPADE" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "trained-1 was run with another config" "$TMP/out" &&
    [ "$(wc -l <"$A/trained-1/train.jsonl")" -eq 1 ] && ! [ -e "$A/trained-1.ini.new" ]
check $? "compare-arms.sh refuses to run on a run made with another config, and leaves it as it was"

echo "1..$n"
[ "$fails" -eq 0 ]
