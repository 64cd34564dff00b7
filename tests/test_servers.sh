#!/bin/sh
# test_servers.sh — `spade run --servers`: episodes played on two `spade serve
# --listen` servers (loopback ports, a shared token) give the outcomes that local
# play gives for the same seeds (random and solve agents, several batch sizes);
# a server killed after a step's reply and started again on its port is dialled
# again and the episode replayed, the transcript unchanged; one killed for good
# stops the run with an error naming it; a wrong token is refused.
# The server side (the token, the protocol) is tested by tests/test_serve and
# tests/python; this is the C client (spade run and spade eval) (core/serve_client.c, core/served_episodes.c).
NAME=servers
. "${srcdir:-.}/tests/tap.sh"
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; exec 3>&- 2>/dev/null; [ -n "$KEEP" ] || rm -rf "$TMP"' EXIT INT TERM
export SPADE_TEST_TOKEN=servers-test-token-0123456789
command -v stdbuf >/dev/null || { echo "SKIP: no stdbuf (coreutils) to see a step's reply as it arrives"; exit 77; }

# waits (bounded in count) until grep -c PATTERN FILE reaches N; no fixed sleep. A FILE not made yet
# (a background job's redirect not opened yet) counts 0: the empty count once ended the wait at once.
count_of() { c=$(grep -c "$1" "$2" 2>/dev/null); echo "${c:-0}"; }
wait_count() { i=0; while [ "$(count_of "$2" "$3")" -lt "$1" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
    [ "$(count_of "$2" "$3")" -ge "$1" ]; }

start_server() { # NAME [ADDR] -> its address in $ADDR, its pid in $PID
    : >"$TMP/$1.out"
    "$SPADE" serve --listen "${2:-tcp:127.0.0.1:0}" --token-env SPADE_TEST_TOKEN >"$TMP/$1.out" 2>&1 &
    PID=$!
    pids="$pids $PID"
    wait_count 1 '^listening on' "$TMP/$1.out" || { echo "Bail out! server $1 did not start"; cat "$TMP/$1.out"; exit 99; }
    ADDR=$(sed -n 's/^listening on tcp://p' "$TMP/$1.out")
}
start_server a; A=$ADDR; PA=$PID
start_server b; B=$ADDR; PB=$PID

# 1. the same outcomes as local play (the JSONL episode lines; the summary has timings)
for args in "maze:size=3 -n 30 -s 3 -b 7" "maze:size=3 -n 12 -s 40 -b 1" "maze -n 6 -s 1 --agent solve -b 4" \
    "$SRC/stdenv/nim.c -n 20 -s 9 -b 32 -w 2"; do
    # shellcheck disable=SC2086
    "$SPADE" run $args -q --jsonl "$TMP/local.jsonl" >"$TMP/out" 2>&1
    # shellcheck disable=SC2086
    "$SPADE" run $args -q --jsonl "$TMP/remote.jsonl" --servers "$A,$B" --token-env SPADE_TEST_TOKEN >>"$TMP/out" 2>&1
    grep -v '"summary"' "$TMP/local.jsonl" >"$TMP/l"
    grep -v '"summary"' "$TMP/remote.jsonl" >"$TMP/r"
    if [ -s "$TMP/l" ] && cmp -s "$TMP/l" "$TMP/r"; then ok "run $args: two servers give local play's outcomes"
    else diff "$TMP/l" "$TMP/r" >>"$TMP/out"; bad "run $args: two servers give local play's outcomes"; fi
done

# spade eval: the reference arms on two servers, the same JSONL as here
"$SPADE" eval none maze:size=3 "$SRC/stdenv/nim.c" -n 8 --seed 4 --jsonl "$TMP/el.jsonl" >"$TMP/out" 2>&1
"$SPADE" eval none maze:size=3 "$SRC/stdenv/nim.c" -n 8 --seed 4 --jsonl "$TMP/er.jsonl" --servers "$A,$B" \
    --token-env SPADE_TEST_TOKEN >>"$TMP/out" 2>&1
if [ -s "$TMP/el.jsonl" ] && cmp -s "$TMP/el.jsonl" "$TMP/er.jsonl"; then ok "eval on two servers: local play's JSONL"
else bad "eval on two servers: local play's JSONL"; fi

# 2. a wrong token: refused, the run fails naming the server
if SPADE_TEST_TOKEN=wrong-wrong-wrong-wrong "$SPADE" run maze -n 1 --servers "$A" --token-env SPADE_TEST_TOKEN \
    >"$TMP/out" 2>&1; then bad "a wrong token is refused"
elif grep -q "unauthorized" "$TMP/out" && grep -q "$A" "$TMP/out"; then ok "a wrong token is refused, naming the server"
else bad "a wrong token is refused, naming the server"; fi

# 3. the server holding the episode is killed after the first step's reply and started again on its port.
# The stdin agent waits for each action, so the kill lands between two steps; --show (line-buffered)
# shows the reply of step 1 (the second "Moves left" line).
ACTS="north south east west south south east east north west south east south east west north north south east east"
printf '%s\n' $ACTS | "$SPADE" run maze:size=3 -n 1 -s 5 --agent stdin --show >"$TMP/local.show" 2>&1
mkfifo "$TMP/in"
exec 3<>"$TMP/in"
stdbuf -oL "$SPADE" run maze:size=3 -n 1 -s 5 --agent stdin --show --servers "$A" --token-env SPADE_TEST_TOKEN \
    <"$TMP/in" >"$TMP/remote.show" 2>"$TMP/remote.err" &
RUN=$!
pids="$pids $RUN"
set -- $ACTS
printf '%s\n' "$1" >&3
shift
if wait_count 2 'Moves left' "$TMP/remote.show"; then
    kill -9 "$PA"; wait "$PA" 2>/dev/null
    start_server a "tcp:$A"; PA=$PID
    printf '%s\n' "$@" >&3
    wait "$RUN"; rc=$?
    exec 3>&-
    cp "$TMP/remote.err" "$TMP/out"
    sed -i 's/, [0-9]* steps\/s//' "$TMP/local.show" "$TMP/remote.show" # the summary's speed differs
    if [ $rc -eq 0 ] && cmp -s "$TMP/local.show" "$TMP/remote.show" && grep -q "$A: reconnected" "$TMP/remote.err"; then
        ok "a restarted server is dialled again and the episode replayed: the transcript is local play's"
    else diff "$TMP/local.show" "$TMP/remote.show" >>"$TMP/out"; bad "a restarted server: the transcript is local play's (rc $rc)"; fi
else bad "the first step's reply never showed"; fi

# 4. the server killed for good: the run stops, naming it
exec 3<>"$TMP/in"
SPADE_SERVERS_RETRIES=1 stdbuf -oL "$SPADE" run maze:size=3 -n 1 -s 5 --agent stdin --show --servers "$B" \
    --token-env SPADE_TEST_TOKEN <"$TMP/in" >"$TMP/gone.show" 2>"$TMP/out" &
RUN=$!
pids="$pids $RUN"
printf 'north\n' >&3
if wait_count 2 'Moves left' "$TMP/gone.show"; then
    kill -9 "$PB"; wait "$PB" 2>/dev/null
    printf 'south\n' >&3
    wait "$RUN"; rc=$?
    exec 3>&-
    if [ $rc -ne 0 ] && grep -q "server $B is gone: no connection after 2 tries" "$TMP/out"; then
        ok "a server gone for good stops the run, naming it"
    else bad "a server gone for good stops the run, naming it (rc $rc)"; fi
else bad "the first step's reply never showed (gone)"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
