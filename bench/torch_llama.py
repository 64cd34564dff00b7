#!/usr/bin/env python3
"""torch_llama.py — the PyTorch reference for bench/bench_llama.sh's training
row: transformers' LlamaForCausalLM with SmolLM2-135M's config (random
weights: the speed of a step does not depend on their values), trained in
eager PyTorch on the CPU with spade's AdamW, printing tokens/s and peak RSS.

What it is: the same shapes as spade's policy of that GGUF (30 layers, width
576, 9 heads over 3 key/value heads, SwiGLU 1536, vocabulary 49,152, tied
head, RoPE base 1e5), one sequence of T tokens a step, forward + backward +
torch.optim.AdamW (lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on
matrices only, gradient clipping at global norm 1: spade_adamw_opts_default),
attention as transformers picks it by default (sdpa), N threads. Step 0 is a
warm-up and is not timed, as in bench_llama. What it is not: tuned PyTorch
(no torch.compile), nor a check of spade's arithmetic.

Usage: torch_llama.py T STEPS [THREADS]
Prints "key value" lines: train_T, train_steps, train_s, train_tps, loss,
peak_rss_mib.
"""
import resource
import sys
import time

import torch
import transformers


def main():
    T, steps = int(sys.argv[1]), int(sys.argv[2])
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    kw = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
              num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5,
              tie_word_embeddings=True, hidden_act="silu")
    try:
        cfg = transformers.LlamaConfig(rope_parameters={"rope_type": "default", "rope_theta": 100000.0}, **kw)
    except TypeError:
        cfg = transformers.LlamaConfig(rope_theta=100000.0, **kw)
    model = transformers.LlamaForCausalLM(cfg)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(3)
    tok = torch.randint(256, 49152 - 256, (1, T + 1), generator=g)
    x, y = tok[:, :T], tok[:, 1:]
    t0 = 0.0
    loss = None
    for s in range(steps + 1):
        if s == 1:
            t0 = time.perf_counter()
        logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"train_T {T}\ntrain_steps {steps}\ntrain_s {dt:.3f}\ntrain_tps {T * steps / dt:.1f}\n"
          f"loss {loss.item():.3f}\npeak_rss_mib {rss:.0f}\n"
          f"params {sum(p.numel() for p in model.parameters())}\ntorch {torch.__version__}\n"
          f"attn {getattr(cfg, '_attn_implementation', '?')}")


if __name__ == "__main__":
    main()
