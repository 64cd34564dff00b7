#!/usr/bin/env python3
"""torch_gpt.py — the PyTorch reference for bench/bench_vs_torch.sh: spade's GPT
(core/policy/gpt.c) written in eager PyTorch, trained with the same AdamW on the
CPU, printing tokens/s.

What it is: the same model (pre-LayerNorm blocks, causal attention, 4x tanh-GELU
MLP, learned positions, output head tied to the padded token embeddings, softmax
over the real vocabulary only), the same parameter count, the same optimiser
(AdamW lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices only,
gradient clipping at global norm 1) and the same random tokens, on N threads.
Attention is scaled_dot_product_attention(is_causal=True), what a PyTorch user
would write. What it is not: a test of spade's arithmetic (tests/test_policy.c
compares the backends), or tuned PyTorch (no torch.compile: eager).

Usage: torch_gpt.py L C NH T B STEPS [THREADS] [V] [Vp]
Prints one line: "torch L=.. C=.. NH=.. T=.. B=..: P params, S steps in Xs, R tokens/s (loss ..)".
"""
import sys
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = torch.nn.LayerNorm(C, eps=1e-5)
        self.qkv = torch.nn.Linear(C, 3 * C)
        self.proj = torch.nn.Linear(C, C)
        self.ln2 = torch.nn.LayerNorm(C, eps=1e-5)
        self.fc = torch.nn.Linear(C, 4 * C)
        self.fcproj = torch.nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, L, C, NH, maxT, V, Vp):
        super().__init__()
        self.V = V
        self.wte = torch.nn.Parameter(torch.randn(Vp, C) * 0.02)
        self.wpe = torch.nn.Parameter(torch.randn(maxT, C) * 0.02)
        self.blocks = torch.nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.lnf = torch.nn.LayerNorm(C, eps=1e-5)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte[idx] + self.wpe[:T]
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.t()
        logits = logits[..., : self.V]  # padding rows are never a token (as spade)
        return F.cross_entropy(logits.reshape(-1, self.V), targets.reshape(-1), ignore_index=-1)


def main():
    a = sys.argv[1:]
    if len(a) < 6:
        sys.exit(__doc__)
    L, C, NH, T, B, steps = (int(x) for x in a[:6])
    threads = int(a[6]) if len(a) > 6 else 2
    V = int(a[7]) if len(a) > 7 else 263
    Vp = int(a[8]) if len(a) > 8 else 320
    torch.set_num_threads(threads)
    torch.manual_seed(1337)
    m = GPT(L, C, NH, T, V, Vp)
    decay = [p for n, p in m.named_parameters() if p.dim() == 2]
    rest = [p for n, p in m.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    # the same token stream as bench_policy's bench_train (an LCG, bytes)
    s, toks = 1, []
    for _ in range(B * T):
        s = (s * 6364136223846793005 + 1) % (1 << 64)
        toks.append((s >> 33) % 256)
    idx = torch.tensor(toks, dtype=torch.long).view(B, T)
    tg = torch.full((B, T), -1, dtype=torch.long)
    tg[:, :-1] = idx[:, 1:]
    t0 = 0.0
    for it in range(steps + 1):
        if it == 1:
            t0 = time.perf_counter()  # step 0 warms up, as in bench_policy
        loss = m(idx, tg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
    dt = time.perf_counter() - t0
    P = sum(p.numel() for p in m.parameters())
    print(f"  torch   L={L} C={C} NH={NH} T={T} B={B}: {P / 1e6:.2f}M params ({P}), {steps} steps in {dt:.2f}s, "
          f"{B * T * steps / dt:.0f} tokens/s (loss {loss.item():.3f})")


if __name__ == "__main__":
    main()
