#!/bin/sh
# test_docs.sh — runs every spade command that README.md and docs/*.md show, the
# way a reader would type it, and fails when one does not exit 0. So a command in
# the docs cannot drift from the program again (issue 10: the README's first-env
# block ended in `params: unknown key 'size'`).
#
# What counts as a command (found automatically, so commands added to the docs
# later are covered without editing this file):
#   - in a fenced block: a line `$ CMD` (```console transcripts; the other lines
#     are output or typed input), or a line starting `spade ` or `./spade `;
#   - in an indented (4-space) block: a line starting `spade ` or `./spade `, or
#     the `./spade ...` parts of an `a && b && ...` chain (`./bootstrap`,
#     `./configure` and `make` parts are the build this test runs in);
#   - in a ```sh (or bash, shell) block: every line that is not a comment;
#   - a trailing `  # comment` is dropped.
# Every ```python block runs too, with .venv's Python (made by ./bootstrap; the
# blocks are skipped, saying so, without it), in the same scratch directory, with
# SPADE_BIN unset and no spade on PATH: the package must find ./spade itself, as a
# reader's would in the built tree (docs/python.md, "Finding the program").
# Commands of one file run in order in one scratch directory (so `spade new X`
# then `spade check plugins/X.c` works), with `./spade` and `spade` both the
# built program, stdenv/, configs/, docs/ and eval/ of the source tree, a copy of plugins/,
# and stdin at EOF (a `spade play` session ends at once, status 0).
# A tutorial written in pieces is assembled: when a file's ```c blocks together
# begin with `/* NAME.c — `, they are written to plugins/NAME.c right after that
# file's `spade new NAME` has run (docs/writing-environments.md's lock.c).
#
# Skipped, each with its reason (add to SKIPS, below, only what cannot run here):
#   a command whose comment starts `# with ` shows the output of an edit the
#     text describes, not the file as the docs leave it;
#   `spade pretrain configs/` trains for minutes (tests/test_policy_pretrain.c
#     runs pretrain end to end on a small config);
#   a command naming a checkpoint (`.ckpt`) needs a trained policy that a test
#     run does not have;
#   `spade serve --listen`/`--stdio` is a server that runs until stopped
#     (tests/test_serve.c and tests/python drive it);
#   `spade model info smollm2-...` needs the model fetched (tests/test_gguf.c
#     reads the real file when it is there).
#   docs/embedding.md's `cc ... $(pkg-config ...)` builds against an installed
#     spade: tests/test_install.sh (make installcheck) runs that very line;
#   docs/cuda.md's `sh bench/gpu_check.sh` needs a GPU and minutes.
#   `spade run`/`spade eval --servers cpu1:7878,...` (docs/scale.md) need servers
#     on other hosts: tests/test_servers.sh runs both against two loopback servers.
#   Not extracted, because they are not spade commands: docs/scale.md's token
#     line (`head -c 32 /dev/urandom | base64 > ~/.spade-token`, what
#     tests/python/test_servers.py does with a fixed token) and the
#     `ssh -N -L 7878:127.0.0.1:7878 user@cpu1` tunnel of docs/scale.md and
#     docs/protocol.md (it needs a second host and an ssh login), and
#     docs/protocol.md's `SPADE_TOKEN=... spade serve --listen ...` (a server that
#     runs until stopped, like the other `spade serve --listen` lines).
#   `make fuzz`, a replay driver and `make check` (docs/fuzzing.md) need the
#     build tree and clang, and run for minutes (tests/test_fuzz.sh replays the corpora).
# `spade train` (the README's main job) runs with SPADE_TRAIN_QUICK=1: the same
# path, shrunk to seconds of work (tests/test_selfplay.sh checks what it writes);
# without SmolLM2 it says it skipped, and the report of its run is skipped.
# Also checked: no page cites DESIGN.md (not in the repository; the map is
# docs/architecture.md).
# Not a check of the commands' output: the tests of each command do that.

srcdir=${srcdir:-.}
SRC=$(cd "$srcdir" && pwd)
SPADE=${SPADE_BIN:-$(pwd)/spade}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/spade-test-docs-XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT INT TERM
[ -x "$SPADE" ] || { echo "spade not built at $SPADE"; exit 99; }
case $SPADE in /*) ;; *) SPADE=$(pwd)/$SPADE ;; esac

SKIPS='# with |shows the output of an edit the text describes
spade pretrain configs/|trains for minutes; tests/test_policy_pretrain.c runs pretrain
.ckpt|needs a trained checkpoint
spade serve --listen|a server that runs until it is stopped; tests/test_serve and tests/python drive it
spade serve --stdio|a server that answers requests on stdin; tests/test_serve and tests/python drive it
pkg-config --|builds against an installed spade; tests/test_install.sh (make installcheck) runs the blocks of docs/embedding.md
PKG_CONFIG_PATH=|points at an installed spade; tests/test_install.sh (make installcheck) runs the blocks of docs/embedding.md
./embed maze|runs the program built against an installed spade; tests/test_install.sh runs the blocks of docs/embedding.md
sh bench/gpu_check.sh|needs a GPU and minutes (docs/cuda.md says when it is run)
spade train configs/base-train.ini|trains from the base checkpoint of the recipe for many minutes; tests/test_demos.sh runs the recipe at toy size
spade train configs/base-curriculum.ini|trains from the base checkpoint of the recipe for minutes; tests/test_demos.sh runs it at toy size
spade train configs/default-template.ini|trains from the base of the embedded default in the source tree runs/; tests/test_template.sh runs it at toy size
spade train configs/default-fixed.ini|trains from the base of the embedded default in the source tree runs/; tests/test_selfplay.sh runs it at toy size
--servers cpu1|needs spade servers on other hosts; tests/test_servers.sh runs spade run and spade eval --servers against two loopback servers
spade eval remote:|needs a served model (tests/test_remote.sh runs eval against llama.cpp'"'"'s server and a loopback stub)
spade train configs/remote-designer.ini|needs a served model at the config'"'"'s url; tests/test_remote.sh runs this config (its url, model and length rewritten) against a loopback stub and llama.cpp'"'"'s server
--agent policy:smollm2|needs the fetched model and a minute; tests/test_chat.sh runs spade run and eval on it in its chat template
spade eval smollm2|needs the fetched model and minutes; tests/test_chat.sh runs spade eval on it
spade eval qwen2.5|needs the fetched Qwen2.5-Coder and minutes under flock /tmp/qwen.lock; tests/test_chat.sh runs the same spade eval on SmolLM2
spade generate smollm2|needs the fetched model; tests/test_pretrained.sh runs spade generate on it when it is there
spade generate qwen2.5|needs the fetched Qwen2.5-Coder (about a minute to load on two cores); no test runs it yet
spade export qwen2.5|needs the fetched Qwen2.5-Coder, 12 GB and minutes; tests/test_export.sh exports the tiny models and SmolLM2
spade model info smollm2|needs the fetched model (./bootstrap fetches it; tests/test_gguf checks the real file when it is there)
compare-arms-smollm2.sh|runs SmolLM2 for most of an hour on one core; tests/test_chat.sh runs it at toy size (one iteration of 2 fillings an arm) and the compare command it prints
compare-arms.sh 8 1 runs/arms-lr|runs SmolLM2 for most of an hour; tests/test_chat.sh runs the same script (through compare-arms-smollm2.sh, with LR=) at toy size
runs/arms-lr1e-4/|reads the runs of the compare-arms.sh lines above it (most of an hour); tests/test_chat.sh runs spade report --compare on toy-size runs of that script
runs/arms-smollm2/|reads the runs of configs/compare-arms-smollm2.sh (most of an hour); tests/test_chat.sh runs spade report --compare on the toy-size runs of that script
spade train configs/hint-template.ini|trains from the hint-literate base of configs/base-hint.ini in runs/ (minutes to build); tests/test_hintbase.sh runs it at toy size
make fuzz|runs libFuzzer for minutes and needs clang and the build tree; tests/test_fuzz.sh replays every corpus in make check
fuzz/build/replay_|needs the build tree and a crash file; tests/test_fuzz.sh runs every replay driver on its corpus
make check TESTS=|is a test run itself, from the build tree (this script runs inside one)'

export SPADE_TRAIN_QUICK=1
# the main job runs on SmolLM2 (./bootstrap fetches it; SPADE_NO_MODEL=1 does not): without it, `spade
# train` says it skipped and makes no run, so the README's report of that run has nothing to read
if [ ! -f "${SPADE_MODELS:-$HOME/.cache/spade/models}/smollm2-135m-instruct.gguf" ]; then
    SKIPS="$SKIPS
spade report runs/default #|needs the main job's run, which needs smollm2-135m-instruct (./bootstrap fetches it)"
fi
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -f "$TMP/out" ] && sed 's/^/#   /' "$TMP/out" | tail -30; }

# FILE -> "LINE<TAB>COMMENT<TAB>COMMAND" for each command, in order (COMMENT is
# the line's trailing `# ...`, or -).
extract() {
    awk '
    function emit(raw, cmd,   c) {
        c = ""
        if (match(raw, /[ \t]+#[ \t].*$/)) c = substr(raw, RSTART)
        sub(/[ \t]+#[ \t].*$/, "", cmd)
        sub(/[ \t]+$/, "", cmd)
        sub(/^[ \t]+/, "", c)
        if (cmd != "") printf "%d\t%s\t%s\n", NR, (c == "" ? "-" : c), cmd
    }
    /^[ \t]*```/ { infence = !infence; lang = $0; sub(/^[ \t]*```/, "", lang); next }
    infence && (lang == "sh" || lang == "bash" || lang == "shell") {
        t = $0; sub(/^[ \t]+/, "", t)
        if (t != "" && t !~ /^#/) emit(t, t)
        next
    }
    infence {
        t = $0; sub(/^[ \t]+/, "", t)
        if (t ~ /^\$ /) { emit(t, substr(t, 3)); next }
        if (lang != "console" && t ~ /^(\.\/)?spade [a-z-]/ && t !~ /^(\.\/)?spade [a-z-]+:/) emit(t, t)
        next
    }
    /^    / {
        t = $0; sub(/^[ \t]+/, "", t)
        if (t ~ /^(\.\/)?spade [a-z-]/) { emit(t, t); next }
        if (t ~ /&& (\.\/)?spade /) {
            k = split(t, part, /[ \t]*&&[ \t]*/)
            for (i = 1; i <= k; i++) if (part[i] ~ /^(\.\/)?spade /) emit(t, part[i])
        }
    }' "$1"
}

# The ```python blocks of FILE, each to DIR/py-LINE.py; prints their first lines.
py_blocks() {
    awk -v dir="$2" '
    /^```python[ \t]*$/ { f = dir "/py-" NR ".py"; printf "" >f; print NR; next }
    /^```/ { if (f) close(f); f = "" }
    f { print >f }' "$1"
}
PY=${SPADE_TEST_PYTHON:-$SRC/.venv/bin/python}
have_py=0
[ -x "$PY" ] && "$PY" -c 'import gymnasium' 2>/dev/null && have_py=1

# The ```c blocks of FILE, concatenated.
c_blocks() { awk '/^```c[ \t]*$/ { f = 1; next } /^```/ { f = 0 } f' "$1"; }

skip_reason() {
    printf '%s\n' "$SKIPS" | while IFS='|' read -r pat why; do
        case $1 in *"$pat"*) echo "$why"; break ;; esac
    done
}

ran=0
for doc in "$SRC/README.md" "$SRC"/docs/*.md; do
    name=${doc#"$SRC"/}
    work="$TMP/work-$(basename "$doc" .md)"
    mkdir -p "$work/plugins" "$TMP/bin"
    cp "$SRC"/plugins/*.c "$work/plugins/" 2>/dev/null
    ln -s "$SRC/stdenv" "$work/stdenv"
    ln -s "$SRC/configs" "$work/configs"
    ln -s "$SRC/docs" "$work/docs"
    ln -s "$SRC/eval" "$work/eval"
    ln -sf "$SPADE" "$work/spade"
    ln -sf "$SPADE" "$TMP/bin/spade"
    : >"$TMP/empty"
    # the assembled tutorial, if the ```c blocks make one file
    tut=$(c_blocks "$doc" | sed -n '1s|^/\* \([a-z0-9_-]*\)\.c — .*|\1|p')
    extract "$doc" >"$TMP/cmds"
    while IFS="$(printf '\t')" read -r line comment cmd; do
        where="$name:$line: $cmd"
        why=$(skip_reason "$cmd $comment")
        if [ -n "$why" ]; then
            echo "ok $((n + 1)) - $where # SKIP $why"
            n=$((n + 1))
            continue
        fi
        (cd "$work" && PATH="$TMP/bin:$PATH" timeout 300 sh -c "$cmd" <"$TMP/empty") >"$TMP/out" 2>&1
        rc=$?
        ran=$((ran + 1))
        if [ "$rc" -eq 0 ]; then ok "$where"; else bad "$where (exit $rc)"; fi
        case $cmd in
        *"spade new $tut"*)
            [ -n "$tut" ] && c_blocks "$doc" >"$work/plugins/$tut.c" &&
                echo "# $name: plugins/$tut.c assembled from the page's C blocks" ;;
        esac
    done <"$TMP/cmds"
    rm -f "$TMP"/py-*.py
    for line in $(py_blocks "$doc" "$TMP"); do
        where="$name:$line: python block"
        if [ "$have_py" -eq 0 ]; then
            echo "ok $((n + 1)) - $where # SKIP no $PY with gymnasium (./bootstrap makes .venv)"
            n=$((n + 1))
            continue
        fi
        # PATH without spade (only the Python's own directory and the system's): ./spade is found from the tree
        (cd "$work" && env -u SPADE_BIN PATH="$(dirname "$PY"):/usr/bin:/bin" PYTHONPATH="$SRC/python" \
            PYTHONDONTWRITEBYTECODE=1 timeout 300 "$PY" "$TMP/py-$line.py" <"$TMP/empty") >"$TMP/out" 2>&1
        rc=$?
        ran=$((ran + 1))
        if [ "$rc" -eq 0 ]; then ok "$where"; else bad "$where (exit $rc)"; fi
    done
done
[ "$ran" -ge 10 ] && ok "found and ran $ran commands" || bad "found only $ran commands: is the extraction broken?"

cites=$(grep -l 'DESIGN\.md' "$SRC/README.md" "$SRC"/docs/*.md 2>/dev/null)
[ -z "$cites" ] && ok "no page cites DESIGN.md" || bad "DESIGN.md cited (cite docs/architecture.md) in: $cites"

echo "1..$n"
[ "$fails" -eq 0 ]
