# remote_stub.py — a loopback stand-in for an OpenAI-compatible server, for
# the answers a real one never gives: junk, 503s. tests/test_remote.sh runs
# it; it is not a mock of the success path (that is llama.cpp's server),
# except `source`: a designer that always writes the same valid environment,
# so the suite checks the served designer's valid path (gated, played by the
# local agent, archived with its writer) where no llama.cpp server is built.
# Usage: remote_stub.py MODE PORTFILE [FILE]   (MODE: junk | flaky | source | reply)
# source: every chat is answered with FILE in a ```c block, and each
# request body is appended to PORTFILE.requests (one JSON line each).
# reply: the same, FILE's text as it is (an agent's reply; test_remote_agent.sh).
# STUB_PORT=N binds port N (a restart on the port a run was given), else any.
import http.server
import json
import sys

MODE, PORTFILE = sys.argv[1], sys.argv[2]
state = {"chats": 0}


class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body):
        b = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        self.send(200, json.dumps({"object": "list", "data": [{"id": "stub"}]}))

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(min(n, 1 << 22))
        state["chats"] += 1
        if MODE in ("source", "reply"):
            with open(PORTFILE + ".requests", "ab") as f:
                f.write(body.replace(b"\n", b" ") + b"\n")
            with open(sys.argv[3]) as f:
                text = f.read()
            if MODE == "source":
                text = "```c\n" + text + "```\n"
            self.send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}))
        elif MODE == "junk":
            self.send(200, '{"answer": "not the OpenAI shape"}')
        elif state["chats"] <= 3:  # flaky: three 503s, then answers
            self.send(503, '{"error": {"message": "loading"}}')
        else:
            self.send(200, json.dumps({"choices": [{"message": {"role": "assistant", "content": "1"}}]}))


import os

s = http.server.HTTPServer(("127.0.0.1", int(os.environ.get("STUB_PORT", "0"))), H)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))

os.rename(PORTFILE + ".tmp", PORTFILE)
s.serve_forever()
