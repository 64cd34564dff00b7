#!/usr/bin/env python3
"""llama_reference.py — llama.cpp's log-probs and greedy continuations for
spade's agreement test (tests/test_pretrained.sh, docs/models.md).

What it is: (1) --f32 OUT writes the model's weights dequantized to F32 into a
new GGUF (gguf-py's reader and dequantizer; metadata copied), the same F32
weights spade trains on; (2) runs llama.cpp (llama-cpp-python) on a GGUF over
prompt files and writes a JSON fixture: per prompt its text, llama.cpp's token
ids, the top-K log-softmax of every position, and the greedy continuation of
--gen tokens (argmax of llama.cpp's logits, stopping at end-of-generation);
(3) --compare JSONL... reads `spade generate --logprobs K` outputs and prints
the max |delta log-softmax| against the fixture (over llama.cpp's top-K ids).
What it is not: part of the build; it needs /work/llama-venv (pip install
llama-cpp-python gguf numpy).

    python tools/llama_reference.py --f32 /tmp/smol-f32.gguf MODEL.gguf
    python tools/llama_reference.py /tmp/smol-f32.gguf --prompts P1 P2 P3 P4 --out tests/data/llama_ref_smollm2.json
"""
import argparse
import json
import sys

import numpy as np


def write_f32(src, dst):
    import gguf
    r = gguf.GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            et = f.types[1]
            if et == gguf.GGUFValueType.STRING:
                val = [bytes(f.parts[i]).decode("utf-8", "surrogateescape") for i in f.data]
            else:
                val = [f.parts[i][0].item() for i in f.data]
            w.add_key_value(name, val, vt, sub_type=et)
        elif vt == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(f.parts[-1]).decode("utf-8", "surrogateescape"), vt)
        else:
            w.add_key_value(name, f.parts[-1][0].item(), vt)
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = list(reversed([int(x) for x in t.shape]))
        w.add_tensor(t.name, a.reshape(shape), raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def log_softmax(z):
    z = z.astype(np.float64)
    m = z.max()
    return z - m - np.log(np.exp(z - m).sum())


def plain_cpu_backend(llama_cpp):
    """Keep llama.cpp on its plain CPU path: no extra buffer types. On a CPU
    with AMX, llama-cpp-python 0.3.36 built natively moves Q8_0/Q4 weights into
    its AMX buffer, and its AMX matrix product crashed (SIGSEGV in
    ggml_backend_amx_mul_mat) on small Q8_0 models; the reference is the
    plain kernels' result, the same on every machine."""
    lib = llama_cpp.llama_cpp  # the module Llama() calls, not the package
    default = lib.llama_model_default_params

    def params():
        p = default()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p
    lib.llama_model_default_params = params


def reference(model, prompts, K, gen, threads):
    import llama_cpp
    plain_cpu_backend(llama_cpp)
    # F32 K/V cache (llama.cpp's default is F16, which alone moves log-probs by ~1e-2)
    llm = llama_cpp.Llama(model_path=model, n_ctx=2048, n_batch=512, logits_all=True, n_threads=threads,
                          type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, flash_attn=False,
                          verbose=False)
    eog = set()
    out = []
    for path in prompts:
        text = open(path, "rb").read().decode("utf-8")
        toks = llm.tokenize(text.encode(), add_bos=True, special=False)
        llm.reset()
        llm.eval(toks)
        scores = np.array(llm.scores[: len(toks)])
        rows = []
        for i in range(len(toks)):
            lp = log_softmax(scores[i])
            top = np.argsort(-lp, kind="stable")[:K]
            rows.append([[int(v), round(float(lp[v]), 6)] for v in top])
        cont = []
        lp = log_softmax(scores[-1])
        for _ in range(gen):
            t = int(np.argmax(lp))
            cont.append(t)
            if llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(llm.model), t):
                break
            llm.eval([t])
            lp = log_softmax(np.array(llm.scores[llm.n_tokens - 1]))
        out.append({"file": path, "text": text, "tokens": [int(t) for t in toks], "top": rows, "greedy": cont})
        print(f"{path}: {len(toks)} tokens, greedy {len(cont)}", file=sys.stderr)
    return {"model": model, "k": K, "prompts": out, "llama_cpp": llama_cpp.__version__}


def compare(fixture, jsonls):
    ref = json.load(open(fixture))
    worst = (0.0, None)
    for p, path in zip(ref["prompts"], jsonls):
        lines = [json.loads(l) for l in open(path)]
        prom = [l for l in lines if not l["gen"]]
        gen = [l["token"] for l in lines if l["gen"]]
        assert [l["token"] for l in prom] == p["tokens"], f"{path}: the prompt's tokens differ"
        for i, (l, r) in enumerate(zip(prom, p["top"])):
            mine = dict((v, lp) for v, lp in l["top"])
            for v, lp in r:
                if v in mine:
                    d = abs(mine[v] - lp)
                    if d > worst[0]:
                        worst = (d, (path, i, v))
                else:
                    worst = (float("inf"), (path, i, v))
        same = gen == p["greedy"][: len(gen)] and len(gen) >= len([t for t in p["greedy"]]) - 1
        print(f"{path}: {len(prom)} positions; greedy {'identical' if same else 'DIFFERS'} "
              f"({len(gen)} generated)")
    print(f"max |delta log-softmax| over llama.cpp's top-{ref['k']}: {worst[0]:.3g} at {worst[1]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--f32", help="write MODEL dequantized to F32 here and stop")
    ap.add_argument("--prompts", nargs="*", default=[])
    ap.add_argument("--out")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compare", nargs="*", help="spade generate --logprobs outputs, one per prompt (MODEL is the fixture)")
    a = ap.parse_args()
    if a.f32:
        write_f32(a.model, a.f32)
        return
    if a.compare:
        compare(a.model, a.compare)
        return
    res = reference(a.model, a.prompts, a.k, a.gen, a.threads)
    with open(a.out, "w") as f:
        json.dump(res, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
