#!/usr/bin/env python3
"""llama_cpp_ref.py — llama.cpp's side of bench/bench_llama.sh: prefill and
decoding tokens/s of a GGUF model through llama-cpp-python's low-level API
(llama_decode on llama_batch), the same shapes bench_llama measures on spade.

What it is: one measurement per invocation, "key value" lines on stdout.
prefill T: one sequence, a T-token prompt in batches of 512 (llama-bench's
micro-batch), logits of the last token only. decode S P N: S sequences, each
its own P-token prompt, then N greedy steps of one token per sequence in one
batch (argmax of each sequence's logits on the host, as spade's draw), timed
apart from the prompts. Token ids are a fixed pseudo-random stream inside the
vocabulary. llama.cpp's defaults otherwise (F16 K/V cache, its flash-attention
choice): what a user of it gets. What it is not: llama-bench (not built by
the Python package), nor a correctness check (tools/llama_reference.py).

Usage: llama_cpp_ref.py MODEL prefill T | decode S P N [--threads N]
Needs /work/llama-venv (pip install llama-cpp-python numpy).
"""
import ctypes
import sys
import time

import llama_cpp
import numpy as np


def tokens(n, V, seed):
    s = (seed * 0x9E3779B97F4A7C15 + 12345) & (2**64 - 1)
    out = []
    span = V - 512 if V > 1024 else V
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out.append((256 if V > 1024 else 0) + (s >> 33) % span)
    return out


def open_model(path, n_ctx, n_seq, threads):
    llama_cpp.llama_backend_init()
    mp = llama_cpp.llama_model_default_params()
    # No extra buffer types (weight repacking, AMX): on a CPU with AMX this
    # build of llama-cpp-python (0.3.36, native) segfaults in
    # ggml_backend_amx_mul_mat on the Q4_1 file's Q8_0 tensors. Off, llama.cpp
    # runs its plain CPU kernels; where repacking works it may be faster with
    # them, so the quantized rows may understate llama.cpp (BENCHMARKS.md).
    if hasattr(mp, "use_extra_bufts"):
        mp.use_extra_bufts = False
    model = llama_cpp.llama_model_load_from_file(path.encode(), mp)
    if not model:
        sys.exit(f"llama_cpp_ref: cannot load {path}")
    cp = llama_cpp.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = 512
    cp.n_ubatch = 512
    cp.n_seq_max = n_seq
    cp.n_threads = threads
    cp.n_threads_batch = threads
    ctx = llama_cpp.llama_init_from_model(model, cp)
    if not ctx:
        sys.exit("llama_cpp_ref: cannot make a context")
    V = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    return model, ctx, V


def decode(ctx, batch, rows):
    """rows: (token, pos, seq, want_logits) tuples, at most the batch's size."""
    batch.n_tokens = len(rows)
    for i, (t, p, s, lg) in enumerate(rows):
        batch.token[i] = t
        batch.pos[i] = p
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = s
        batch.logits[i] = 1 if lg else 0
    if llama_cpp.llama_decode(ctx, batch) != 0:
        sys.exit("llama_cpp_ref: llama_decode failed")


def main():
    args = [a for a in sys.argv[1:]]
    threads = 2
    if "--threads" in args:
        i = args.index("--threads")
        threads = int(args[i + 1])
        del args[i:i + 2]
    path, mode, nums = args[0], args[1], [int(x) for x in args[2:]]
    if mode == "prefill":
        T = nums[0]
        model, ctx, V = open_model(path, T + 16, 1, threads)
        batch = llama_cpp.llama_batch_init(512, 0, 1)
        t = tokens(T, V, 1)
        decode(ctx, batch, [(t[i], i, 0, i == 15) for i in range(16)])  # warm-up, as bench_llama
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        t0 = time.perf_counter()
        for a in range(0, T, 512):
            b = min(T, a + 512)
            decode(ctx, batch, [(t[i], i, 0, i == T - 1) for i in range(a, b)])
        llama_cpp.llama_get_logits_ith(ctx, -1)[0]  # synchronises
        dt = time.perf_counter() - t0
        print(f"prefill_tokens {T}\nprefill_s {dt:.4f}\nprefill_tps {T / dt:.1f}")
    elif mode == "decode":
        S, P, N = nums
        model, ctx, V = open_model(path, S * (P + N) + 16, S, threads)
        batch = llama_cpp.llama_batch_init(max(512, S), 0, S)
        t0 = time.perf_counter()
        rows = []
        for s in range(S):
            pr = tokens(P, V, 100 + s)
            rows += [(pr[i], i, s, i == P - 1) for i in range(P)]
        out_idx = {}
        for a in range(0, len(rows), 512):
            chunk = rows[a:a + 512]
            decode(ctx, batch, chunk)
            for j, r in enumerate(chunk):
                if r[3]:
                    out_idx[r[2]] = j
        last = {s: int(np.argmax(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, j), shape=(V,))))
                for s, j in out_idx.items()}
        t1 = time.perf_counter()
        # N tokens a sequence as spade_decoder_sample draws them: the first
        # from the prompt's logits, each next after one pass of the last
        drawn = S
        for step in range(N - 1):
            decode(ctx, batch, [(last[s], P + step, s, True) for s in range(S)])
            for s in range(S):
                z = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, s), shape=(V,))
                last[s] = int(np.argmax(z))
            drawn += S
        t2 = time.perf_counter()
        print(f"decode_slots {S}\ndecode_prompt {P}\ndecode_tokens {drawn}\nprompt_s {t1 - t0:.4f}\n"
              f"decode_s {t2 - t1:.4f}\ndecode_tps {drawn / (t2 - t1):.2f}")
    else:
        sys.exit("usage: llama_cpp_ref.py MODEL prefill T | decode S P N [--threads N]")


if __name__ == "__main__":
    main()
