#!/usr/bin/env python3
"""seeds_lora.py — writes the LoRA seeds of fuzz/fuzz_checkpoint.c into
fuzz/corpus/checkpoint/ (run from the source tree:
python3 fuzz/seeds_lora.py SEEDED.ckpt MODEL.ckpt). Both inputs are version-4
checkpoints that `spade train` wrote after one iteration with [policy]
lora_rank = 2, lora_alpha = 4 (seed 5, envs = carry_add:digits=1, 2 envs x 2
plays): SEEDED of a seeded llama (arch = llama, 1 layer, 2 heads, width 16,
context 32; base kind 0, so it loads with no file beside it), MODEL of the
tiny random Llama of tests/make_tiny_gguf (`make_tiny_gguf llama tiny.gguf 3`,
context 64, backend cpu_ref; base kind 1). MODEL's base and tokenizer are
renamed to a path that does not exist, so that no seed reads a file outside
the corpus. The others are SEEDED with one LoRA field made wrong: an absurd,
zero or other rank, a NaN alpha, no, unknown or other targets, base kind 3,
a short or uppercase SHA-256, an empty base, an absent base checkpoint, a
version-3 header size. Every checksum is made true (the harness rewrites it
anyway). What it is not: a fuzzer, or a test of the messages
(tests/test_lora.c).
"""
import os, struct, sys

ABSENT = '/nonexistent/spade-fuzz/tiny.gguf'

def fnv1a(b):
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h

def put(name, b):
    b = bytes(b[:-8]) + struct.pack('<Q', fnv1a(b[:-8]))
    with open(os.path.join('fuzz/corpus/checkpoint', name), 'wb') as f:
        f.write(b)

def base(b, spec, kind=None, sha=None):
    """bytes 148 (kind), 152..216 (the base's SHA-256 in hex), 216..1240 (its name)"""
    b = bytearray(b)
    b[216:1240] = spec.encode().ljust(1024, b'\0')
    if kind is not None: struct.pack_into('<I', b, 148, kind)
    if sha is not None: b[152:216] = sha.encode().ljust(64, b'\0')
    return b

def field(b, off, v, fmt='<I'):
    b = bytearray(b)
    struct.pack_into(fmt, b, off, v)
    return b

def renamed_model(b):
    """MODEL with its base and the model its tokenizer text names both ABSENT"""
    k = struct.unpack_from('<Q', b, 72)[0]
    text = b[1264:1264 + k].decode()
    lines = [('model ' + ABSENT) if l.startswith('model ') else l for l in text.split('\n')]
    new = '\n'.join(lines).encode()
    b = base(b, ABSENT)
    b = b[:1264] + new + b[1264 + k:]
    struct.pack_into('<Q', b, 72, len(new))
    return b

seeded = bytearray(open(sys.argv[1], 'rb').read())
model = bytearray(open(sys.argv[2], 'rb').read())
put('lora-seeded.ckpt', seeded)
put('lora-model-absent.ckpt', renamed_model(model))
put('lora-rank-absurd.ckpt', field(seeded, 136, 0x7fffffff, '<i'))
put('lora-rank-zero.ckpt', field(seeded, 136, 0, '<i'))
put('lora-rank-other.ckpt', field(seeded, 136, 3, '<i'))
put('lora-alpha-nan.ckpt', field(seeded, 140, 0x7fc00000))
put('lora-targets-none.ckpt', field(seeded, 144, 0))
put('lora-targets-unknown.ckpt', field(seeded, 144, 0x1f))
put('lora-targets-other.ckpt', field(seeded, 144, 0x3))
put('lora-base-kind-3.ckpt', field(seeded, 148, 3))
put('lora-sha-short.ckpt', base(seeded, ABSENT, 1, 'ab' * 20))
put('lora-sha-upper.ckpt', base(seeded, ABSENT, 1, 'AB' * 32))
put('lora-base-empty.ckpt', base(seeded, '', 1, 'a' * 64))
put('lora-base-ckpt-absent.ckpt', base(seeded, '/nonexistent/spade-fuzz/base.ckpt', 2, 'a' * 64))
put('lora-header-v3-size.ckpt', field(seeded, 16, 136))
