#!/bin/sh
# bench_remote.sh — requests/s and mean latency of the remote policy's client
# (bench/bench_remote) against a direct Python client (threads + urllib, the
# same request body) on one llama.cpp server, at concurrency 1, 8, 32, in one
# run; prints a markdown table with the ratio. Not a test.
# Usage: bench/bench_remote.sh [N]   (PY: a python with llama_cpp.server; MODEL: the gguf)
N=${1:-32}
PY=${PY:-/work/llama-venv/bin/python}
MODEL=${MODEL:-$HOME/.cache/spade/models/smollm2-135m-instruct.gguf}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 "$PY" -m llama_cpp.server --model "$MODEL" --model_alias smollm2 --host 127.0.0.1 --port "$port" \
    --n_ctx 2048 --n_threads 1 --n_batch 1 --n_ubatch 1 >/dev/null 2>&1 & srv=$!
trap 'kill $srv 2>/dev/null' EXIT INT TERM
URL="http://127.0.0.1:$port"
i=0; while ! curl -sf "$URL/v1/models" >/dev/null 2>&1 && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.1; done
echo "| concurrency | spade req/s | spade latency s | python req/s | python latency s | spade / python req/s |"
echo "|---|---|---|---|---|---|"
for c in 1 8 32; do
    set -- $(./bench/bench_remote "$URL" smollm2 "$N" "$c")
    sr=$1 sl=$2
    set -- $(python3 - "$URL" "$N" "$c" <<'PYEOF'
import json, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, n, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def one(i):
    body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": "Say one word."}],
                       "max_tokens": 4, "temperature": 0, "seed": i}).encode()
    t = time.monotonic()
    req = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    json.loads(urllib.request.urlopen(req, timeout=120).read())["choices"][0]["message"]["content"]
    return time.monotonic() - t
t = time.monotonic()
with ThreadPoolExecutor(c) as ex:
    lat = list(ex.map(one, range(n)))
print("%.3f %.4f" % (n / (time.monotonic() - t), sum(lat) / n))
PYEOF
)
    echo "| $c | $sr | $sl | $1 | $2 | $(python3 -c "print('%.2f' % ($sr / $1))") |"
done
