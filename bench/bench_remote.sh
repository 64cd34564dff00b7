#!/bin/sh
# bench_remote.sh — requests/s and mean latency of the remote policy's client
# (bench/bench_remote) against a direct Python client (threads + urllib, the
# same request body) on one llama.cpp server, at concurrency 1, 8, 32, in one
# run; prints a markdown table with the ratio. Two request shapes: "word"
# (a 4-token reply to a one-line prompt: the client's own overhead) and
# "designer" (spade train's served designer: the system card and a ~350-token
# prompt, 32-token replies, each recorded in an archive as train does). Not a test.
# Usage: bench/bench_remote.sh [N]   (PY: a python with llama_cpp.server; MODEL: the gguf)
# Run from the build tree root (bench/bench_remote, stdenv/nim.c).
N=${1:-32}
PY=${PY:-/work/llama-venv/bin/python}
MODEL=${MODEL:-$HOME/.cache/spade/models/smollm2-135m-instruct.gguf}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 "$PY" -m llama_cpp.server --model "$MODEL" --model_alias smollm2 --host 127.0.0.1 --port "$port" \
    --n_ctx 2048 --n_threads 1 --n_batch 1 --n_ubatch 1 >/dev/null 2>&1 & srv=$!
MSGS=$(mktemp)
trap 'kill $srv 2>/dev/null; rm -f "$MSGS"' EXIT INT TERM
./bench/bench_remote messages >"$MSGS" || exit 1
URL="http://127.0.0.1:$port"
i=0; while ! curl -sf "$URL/v1/models" >/dev/null 2>&1 && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.1; done
# warm-up, not measured: the server's first requests (and its first long prompt) pay for loading
./bench/bench_remote "$URL" smollm2 2 1 >/dev/null && ./bench/bench_remote "$URL" smollm2 2 1 designer >/dev/null || exit 1
echo "| request | concurrency | spade req/s | spade latency s | python req/s | python latency s | spade / python req/s |"
echo "|---|---|---|---|---|---|---|"
for shape in word designer; do
    n=$N; [ $shape = designer ] && n=$((N / 2))
    for c in 1 8 32; do
        # one unmeasured request of the shape first: llama-cpp-python reuses the last prompt's cache, so
        # whichever client ran first after a change of shape would pay the only cold prefill
        ./bench/bench_remote "$URL" smollm2 1 1 $([ $shape = designer ] && echo designer) >/dev/null || exit 1
        set -- $(./bench/bench_remote "$URL" smollm2 "$n" "$c" $([ $shape = designer ] && echo designer))
        sr=$1 sl=$2
        set -- $(python3 - "$URL" "$n" "$c" "$shape" "$MSGS" <<'PYEOF'
import json, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, n, c, shape = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
msgs = json.load(open(sys.argv[5])) if shape == "designer" else [{"role": "user", "content": "Say one word."}]
def one(i):
    body = json.dumps({"model": "smollm2", "messages": msgs, "max_tokens": 32 if shape == "designer" else 4,
                       "temperature": 0, "seed": i}).encode()
    t = time.monotonic()
    req = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    json.loads(urllib.request.urlopen(req, timeout=300).read())["choices"][0]["message"]["content"]
    return time.monotonic() - t
t = time.monotonic()
with ThreadPoolExecutor(c) as ex:
    lat = list(ex.map(one, range(n)))
wall = time.monotonic() - t
# designer: as bench_remote reports it (wall time x requests in flight / n; its batch call has no per-reply clock)
print("%.3f %.4f" % (n / wall, wall * min(c, n) / n if shape == "designer" else sum(lat) / n))
PYEOF
)
        echo "| $shape | $c | $sr | $sl | $1 | $2 | $(python3 -c "print('%.2f' % ($sr / $1))") |"
    done
done
