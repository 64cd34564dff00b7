#!/bin/sh
# test_remote_agent.sh — the served agent's reasoning budget (agent/remote_agent.c)
# against the loopback stub (tests/remote_stub.py reply: every chat answered with
# one fixed text, every request body recorded): the request's system line is
# core/chat.h's for the budget, its max_tokens the budget plus the answer's
# tokens, no newline stop, and the environment gets the reply's last \boxed{...}
# (dsl/runtime.h's spade_answer_span, as the local policy agent reads it);
# without a budget, the one-line request as before. Needs only python3, no
# llama.cpp. Not a test of the server (test_remote.sh) nor of learning.
NAME=remote_agent
. "${srcdir:-.}/tests/tap.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3 for the loopback stub"; exit 77; }
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; [ -n "$KEEP" ] || rm -rf "$TMP"' EXIT INT TERM
HL="$SRC/eval/heldout/high_low.c"
wait_file() { i=0; while [ ! -s "$1" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done; [ -s "$1" ]; }

# the reply: reasoning over lines with other numbers in it, then the answer
printf 'Between 1 and 100, so 50 or 5 first?\nNo: I pick \\boxed{7}.\n' >"$TMP/reply.txt"
python3 "$SRC/tests/remote_stub.py" reply "$TMP/port" "$TMP/reply.txt" & pids="$pids $!"
wait_file "$TMP/port" || { echo "Bail out! the stub did not start"; exit 99; }
STUB="http://127.0.0.1:$(cat "$TMP/port")"
REQ="$TMP/port.requests"
# req FIELD: one line per recorded request, that field of it (system: the first message's text)
req() {
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    q = json.loads(l)
    print(q["messages"][0]["content"] if sys.argv[2] == "system" else json.dumps(q.get(sys.argv[2])))' "$REQ" "$1"
}
# sys R: core/chat.h's system line for a budget of R tokens
sys() { printf 'You play a text environment. Think about each observation step by step, in at most %s tokens, then give your action as \\boxed{ACTION}.' "$1"; }

# 1. spade run --agent remote: --reasoning-tokens 100: the system line, max_tokens 100 + 64, the boxed answer played
if "$SPADE" run "$HL" --agent "remote:$STUB#stub" --episodes 1 --show --reasoning-tokens 100 >"$TMP/out" 2>&1 &&
    [ -s "$REQ" ] && [ "$(req system | sort -u)" = "$(sys 100)" ] && [ "$(req max_tokens | sort -u)" = 164 ] &&
    [ "$(req stop | sort -u)" = null ]
then ok "spade run --reasoning-tokens 100: the budget's system line, max_tokens 164, no newline stop"
else bad "spade run --reasoning-tokens 100: the budget's system line, max_tokens 164, no newline stop"; fi
actions=$(grep -c '> ' "$TMP/out")
if [ "$actions" -ge 1 ] && [ "$(grep '> ' "$TMP/out" | sed 's/.*> //' | sort -u)" = 7 ]; then
    ok "the reply's last boxed answer is the action ($actions turns, each 7)"
else bad "the reply's last boxed answer is the action"; fi
# the chat keeps the whole reply as the assistant's turn (what the model wrote)
if python3 -c 'import json,sys
q = [json.loads(l) for l in open(sys.argv[1])][-1]
a = [m["content"] for m in q["messages"] if m["role"] == "assistant"]
sys.exit(0 if a and all(x == open(sys.argv[2]).read() for x in a) else 1)' "$REQ" "$TMP/reply.txt"
then ok "the next request carries the whole reply as the assistant's turn"
else bad "the next request carries the whole reply as the assistant's turn"; fi

# 2. spade eval remote: --reasoning-tokens 40 --action-tokens 8: max_tokens 48
rm -f "$REQ"
if "$SPADE" eval "remote:$STUB#stub" "$HL" -n 1 --no-reference --reasoning-tokens 40 --action-tokens 8 >"$TMP/out" 2>&1 &&
    [ "$(req max_tokens | sort -u)" = 48 ] &&
    [ "$(req system | sort -u)" = "$(sys 40)" ]
then ok "spade eval remote: --reasoning-tokens 40 --action-tokens 8: max_tokens 48 and the budget's system line"
else bad "spade eval remote: --reasoning-tokens 40 --action-tokens 8: max_tokens 48 and the budget's system line"; fi

# 3. no budget: the one-line request as before (the plain system line, the client's 64, a newline stop),
#    the action the reply's first line
rm -f "$REQ"
if "$SPADE" run "$HL" --agent "remote:$STUB#stub" --episodes 1 --show >"$TMP/out" 2>&1 &&
    [ "$(req system | sort -u)" = "You play a text environment. Answer each observation with one action on one line." ] &&
    [ "$(req max_tokens | sort -u)" = 64 ] && [ "$(req stop | sort -u)" = '["\n"]' ] &&
    [ "$(grep '> ' "$TMP/out" | sed 's/.*> //' | sort -u)" = "Between 1 and 100, so 50 or 5 first?" ]
then ok "no budget: the one-line request and the first line played"
else bad "no budget: the one-line request and the first line played"; fi

# 4. --reasoning-tokens with an agent that cannot take it is refused
if "$SPADE" run "$HL" --agent random --reasoning-tokens 8 >"$TMP/out" 2>&1; then bad "--reasoning-tokens with --agent random refused"
elif grep -q "reasoning-tokens is for --agent policy:... or remote:..." "$TMP/out"; then ok "--reasoning-tokens with --agent random refused"
else bad "--reasoning-tokens with --agent random refused"; fi
echo "1..$n"
[ $fails = 0 ]
