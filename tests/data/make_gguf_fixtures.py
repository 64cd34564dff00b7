#!/usr/bin/env python3
"""make_gguf_fixtures.py — the GGUF fixtures of tests/test_gguf.c and the fuzzer's seed corpus.

What it is: a script run by hand (not by make check, which needs no Python) that
writes, with the `gguf` Python package (llama.cpp's gguf-py, `pip install gguf`):

  tests/data/gguf_quants.gguf   for each tensor type spade dequantizes, random raw
      blocks ("q.TYPE", stored as that type) and what gguf-py's dequantize makes
      of them ("want.TYPE", F32), so the C reader is checked bit for bit against
      the package without running it; random floats "src" with gguf-py's Q8_0 and
      F16 quantization of them ("pyq.Q8_0", "pyq.F16", for the writer); and one
      key of every metadata type, nested arrays included, with alignment 64.
  fuzz/corpus/gguf/*.gguf       a few tiny valid files the fuzzer starts from.

What it is not: a model maker (the tiny Llama/Qwen2 models are the model code's).
Run from the source tree: .venv/bin/python tests/data/make_gguf_fixtures.py
The outputs are committed; rerunning with the same package version rewrites them
byte for byte (fixed seeds).
"""
import os
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as T
except ImportError:
    sys.exit("make_gguf_fixtures.py: needs the gguf package (.venv/bin/pip install gguf)")

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# byte offsets of the fp16 scale fields in each block type (kept finite and
# modest, so that the expected floats are finite and compare bit for bit)
SCALES = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
TYPES = [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K, T.Q6_K]
ROW, ROWS = 512, 2  # 1024 elements of each type: a whole number of 32- and 256-blocks per row


def raw_blocks(rng, t, n):
    blck, size = gguf.GGML_QUANT_SIZES[t]
    if t == T.F32:
        return rng.standard_normal(n).astype(np.float32).view(np.uint8)
    if t == T.F16:
        bits = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
        bits[(bits & 0x7C00) == 0x7C00] &= 0xFC00  # no NaNs: inf stays, a NaN becomes inf
        k = min(64, n)
        bits[:k] = np.arange(k, dtype=np.uint16) | (np.arange(k, dtype=np.uint16) & 1) << 15  # subnormals
        return bits.view(np.uint8)
    if t == T.BF16:
        bits = rng.integers(0, 1 << 16, n, dtype=np.uint32).astype(np.uint16)
        bits[(bits & 0x7F80) == 0x7F80] &= 0xFF80
        return bits.view(np.uint8)
    nb = n // blck
    b = rng.integers(0, 256, (nb, size), dtype=np.uint32).astype(np.uint8)
    for off in SCALES[t]:
        d = rng.uniform(-2, 2, nb).astype(np.float16)
        d[0] = np.float16(6e-6)  # a subnormal scale
        b[:, off:off + 2] = d.view(np.uint8).reshape(nb, 2)
    return b.reshape(-1)


def quants(path):
    rng = np.random.default_rng(16)
    w = gguf.GGUFWriter(path, "spade-test")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "h\u00e9llo \"world\"\n")
    w.add_uint64("t.u64", (1 << 40) + 3)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 3.25)
    w.add_array("t.arr_str", ["a", "bc", "", "\u00fc"])
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_array("t.arr_f32", [0.25, -1.5])
    w.add_array("t.nested", [[1, 2], [3]])
    w.add_array("t.nested2", [[["x"]], [["y", "z"]]])
    for t in TYPES:
        raw = raw_blocks(rng, t, ROW * ROWS)
        want = gguf.quants.dequantize(raw.reshape(ROWS, -1), t).astype(np.float32)
        assert want.shape == (ROWS, ROW) and np.isfinite(want).all() or t in (T.F16, T.BF16)
        w.add_tensor("q." + t.name, raw.reshape(ROWS, -1), raw_dtype=t)
        w.add_tensor("want." + t.name, np.ascontiguousarray(want))
    src = (rng.standard_normal((4, 64)) * np.array([1, 1e-3, 100, 0])[:, None]).astype(np.float32)
    src[3, :] = 0  # an all-zero block: Q8_0's d = 0
    src[0, 5] = 0.5 / 127 * 3  # values near a rounding midpoint
    w.add_tensor("src", src)
    w.add_tensor("pyq.Q8_0", gguf.quants.quantize(src, T.Q8_0), raw_dtype=T.Q8_0)
    w.add_tensor("pyq.F16", src.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def corpus(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    # metadata of every type, no tensors
    w = gguf.GGUFWriter(os.path.join(d, "metadata.gguf"), "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_int8("t.i8", -1)
    w.add_uint16("t.u16", 7)
    w.add_int64("t.i64", -5)
    w.add_float64("t.f64", 0.125)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "ab", "<|end|>"])
    w.add_array("tokenizer.ggml.token_type", [1, 1, 1, 3])
    w.add_array("tokenizer.ggml.merges", ["a b"])
    w.add_array("t.nested", [[1, 2], [3]])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # one small tensor of each type
    w = gguf.GGUFWriter(os.path.join(d, "tensors.gguf"), "llama")
    for t in TYPES:
        blck = gguf.GGML_QUANT_SIZES[t][0]
        n = max(blck, 8)
        w.add_tensor("t." + t.name, raw_blocks(rng, t, n).reshape(1, -1), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    # v3 with alignment 8 and a 3-d tensor
    w = gguf.GGUFWriter(os.path.join(d, "aligned.gguf"), "qwen2")
    w.add_custom_alignment(8)
    w.add_tensor("x", rng.standard_normal((2, 3, 4)).astype(np.float32))
    w.add_tensor("y", rng.standard_normal(5).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    quants(os.path.join(TOP, "tests", "data", "gguf_quants.gguf"))
    corpus(os.path.join(TOP, "fuzz", "corpus", "gguf"))
    print("wrote tests/data/gguf_quants.gguf and fuzz/corpus/gguf/")
