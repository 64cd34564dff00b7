#!/usr/bin/env python3
"""q8_llama_ref.py — llama.cpp's own Q8_0-against-F32 drift on a token path,
the reference for spade's `bench_llama MODEL q8check` (bench/bench_q8.sh).

What it is: llama.cpp (llama-cpp-python, F32 K/V cache) runs the same token
ids through an F32 GGUF and a Q8_0 GGUF of the same model (both from
`spade export --type f32|q8_0`) and prints, in q8check's format, the mean
KL(f32 || q8_0) and the largest |delta log-softmax| over tokens with
p >= 0.001 at the positions q8check measures (after the P prompt tokens and
every 8 tokens from there), and how many greedy tokens from the prompt agree.
What it is not: part of the build; it needs /work/llama-venv.

    python bench/q8_llama_ref.py F32.gguf Q8.gguf P TOKEN...
"""
import sys

import numpy as np


def log_softmax(z):
    z = z.astype(np.float64)
    m = z.max()
    return z - m - np.log(np.exp(z - m).sum())


def run(path, toks, gen):
    import llama_cpp
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    from llama_reference import plain_cpu_backend  # AMX off: see there
    plain_cpu_backend(llama_cpp)
    llm = llama_cpp.Llama(model_path=path, n_ctx=1024, n_batch=512, logits_all=True, n_threads=2,
                          type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32, flash_attn=False,
                          verbose=False)
    llm.eval(toks)
    scores = np.array(llm.scores[: len(toks)])
    return llm, scores


def greedy(llm, prompt, n):
    llm.reset()
    llm.eval(prompt)
    out = []
    for _ in range(n):
        t = int(np.argmax(np.array(llm.scores[llm.n_tokens - 1])))
        out.append(t)
        llm.eval([t])
    return out


def main():
    f32, q8, P = sys.argv[1], sys.argv[2], int(sys.argv[3])
    toks = [int(t) for t in sys.argv[4:]]
    llm_a, a = run(f32, toks, 0)
    llm_b, b = run(q8, toks, 0)
    kl, worst, n = 0.0, 0.0, 0
    for i in range(P - 1, len(toks) - 1, 8):
        la, lb = log_softmax(a[i]), log_softmax(b[i])
        kl += float(np.sum(np.exp(la) * (la - lb)))
        keep = la >= np.log(1e-3)
        worst = max(worst, float(np.max(np.abs(la - lb)[keep])))
        n += 1
    ga = greedy(llm_a, toks[:P], len(toks) - P)
    gb = greedy(llm_b, toks[:P], len(toks) - P)
    same = 0
    while same < len(ga) and ga[same] == gb[same]:
        same += 1
    print(f"llama_q8_greedy_same_prefix {same}\nllama_q8_max_dlogsoftmax_p_ge_0.001 {worst:.4f}\n"
          f"llama_q8_mean_kl {kl / n:.5f}\nllama_f32_greedy_matches_spade_path {int(ga == toks[P:])}")


if __name__ == "__main__":
    main()
