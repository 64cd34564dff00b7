#!/bin/sh
# test_hintbase.sh — the hint-literate base recipe of docs/selfplay.md ("A
# base that reads the hint") at toy size, in the tree's layout rebuilt in TMP:
# configs/cups-fill.sh fills templates/cups.c into a game that passes spade
# check; configs/base-hint-data.sh (cups 2..4, 2 episodes a filling) writes
# the stdenv sources and SOLVE's cups games, half with the hint, and no filled
# source; configs/base-hint.ini pretrains from it (8 steps);
# configs/hint-template.ini runs 2 iterations from that base, trained and
# frozen; configs/template-table.py summarises both runs. Not a test of
# learning: the figures come from the full-size commands in the docs.

NAME=hintbase
. "${srcdir:-.}/tests/tap.sh"

T="$TMP/tree"
mkdir -p "$T/configs" "$T/runs"
ln -s "$SRC/templates" "$T/templates"
ln -s "$SRC/stdenv" "$T/stdenv"
ln -sf "$SPADE" "$T/spade"
cp "$SRC/configs/cups-fill.sh" "$SRC/configs/base-hint-data.sh" "$T/configs/"

(cd "$T" && sh configs/cups-fill.sh 7 4 runs/cups-7-4.c) >"$TMP/out" 2>&1
if ! grep -q '@@' "$T/runs/cups-7-4.c" && grep -q '"cups = 7\\$' "$T/runs/cups-7-4.c" && grep -q '"tries = 4\\$' "$T/runs/cups-7-4.c" &&
    "$SPADE" check "$T/runs/cups-7-4.c" >"$TMP/out" 2>&1; then
    ok "cups-fill.sh fills the two holes into a game that passes spade check"
else bad "cups-fill.sh fills the two holes into a game that passes spade check"; fi

(cd "$T" && MAX_CUPS=4 EPISODES=2 sh configs/base-hint-data.sh runs/base-hint-data ./spade) >"$TMP/out" 2>&1
st=$?
D="$T/runs/base-hint-data"
nt=$(find "$D/cups" -name cups.transcript 2>/dev/null | wc -l)
if [ $st -eq 0 ] && [ "$nt" -eq 6 ] && [ -f "$D/stdenv/nim.c" ] && [ -f "$D/stdenv-copy2/nim.c" ] && [ ! -e "$D/stdenv-copy3" ] && [ ! -e "$D/filled" ] &&
    grep -q '<|hint|>The ball is under an' "$D/cups/3-2/cups.transcript" &&
    [ "$(grep -c '^<|agent|>' "$D/cups/3-2/cups.transcript")" -eq 2 ] &&
    [ "$(grep -c '<|hint|>' "$D/cups/3-2/cups.transcript")" -eq 1 ] &&
    grep -q 'one of 4 cups, 1 to 4. Name a cup. You have 4 tries' "$D/cups/4-4/cups.transcript"; then
    ok "base-hint-data.sh writes stdenv and SOLVE's cups games (cups 2..4, tries half and half + 2), one of two with the hint"
else echo "# $nt transcripts" >>"$TMP/out"; bad "base-hint-data.sh writes the data"; fi

sed "s/^steps = 1600/steps = 8/" "$SRC/configs/base-hint.ini" >"$T/configs/base-hint.ini"
(cd "$T" && "$SPADE" pretrain configs/base-hint.ini) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -f "$T/runs/base-hint/policy.ckpt" ]; then ok "base-hint.ini pretrains from that data (8 steps)"
else bad "base-hint.ini pretrains from that data"; fi

sed 's/^iterations = 30/iterations = 2/' "$SRC/configs/hint-template.ini" >"$T/configs/hint-template.ini"
sed 's/^dir = ..\/runs\/hint-template/&-frozen/; s/^\[designer\]/&\ntrain = false/' "$T/configs/hint-template.ini" >"$T/configs/hint-frozen.ini"
"$SPADE" train "$T/configs/hint-template.ini" >"$TMP/out" 2>&1 && "$SPADE" train "$T/configs/hint-frozen.ini" >>"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ "$(grep -c '"written":8,' "$T/runs/hint-template/train.jsonl")" -eq 2 ] &&
    [ "$(grep -c '"written":8,' "$T/runs/hint-template-frozen/train.jsonl")" -eq 2 ] &&
    ! grep -q '"designer_samples":[1-9]' "$T/runs/hint-template-frozen/train.jsonl"; then
    ok "hint-template.ini runs from that base, trained and frozen (no designer samples), 2 iterations"
else bad "hint-template.ini runs from that base, trained and frozen"; fi

if command -v python3 >/dev/null 2>&1; then
    python3 "$SRC/configs/template-table.py" "$T/runs/hint-template" "$T/runs/hint-template-frozen" >"$TMP/out" 2>&1
    if [ $? -eq 0 ] && [ "$(grep -c '^valid_first10 *[0-9]*/16$' "$TMP/out")" -eq 2 ] && [ "$(grep -c '^reward ' "$TMP/out")" -eq 2 ]; then
        ok "template-table.py summarises both runs (16 fillings in the first 10 iterations)"
    else bad "template-table.py summarises both runs"; fi
else ok "# SKIP template-table.py: no python3"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
