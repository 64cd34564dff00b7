#!/usr/bin/env python3
"""seeds_archive.py — writes the seed inputs of fuzz/fuzz_archive.c into
fuzz/corpus/archive/ (run from the source tree: python3 fuzz/seeds_archive.py).
Each seed is the harness's encoding: a mode byte, then rows (a table byte,
then each column as a tag byte and its bytes). What it is not: a fuzzer.
"""
import os, struct

NULL, INT, REAL, SMALL, TEXT, BLOB = 0, 1, 2, 3, 4, 5

def val(tag, v=None):
    if tag == NULL: return bytes([NULL])
    if tag == INT: return bytes([INT]) + struct.pack('>q', v)
    if tag == REAL: return bytes([REAL]) + struct.pack('>Q', struct.unpack('<Q', struct.pack('<d', v))[0])
    if tag == SMALL: return bytes([SMALL, v & 0xFF])
    data = v.encode() if isinstance(v, str) else v
    assert len(data) < 255
    return bytes([tag, len(data)]) + data

def env(id_, it, fam, gate, pn, ph, reg, emb=b'', hsh='00000000deadbeef', src='STEP { }'):
    cols = [val(SMALL, id_), val(SMALL, it), val(TEXT, fam), val(TEXT, ''), val(TEXT, src), val(TEXT, hsh),
            val(TEXT, gate), val(TEXT, ''), val(TEXT, 'the hint'), val(REAL, pn), val(REAL, ph), val(REAL, reg),
            val(REAL, 0.5), val(SMALL, 4), val(BLOB, emb) if emb else val(NULL)]
    return bytes([0]) + b''.join(cols)

def play(env_id):
    return bytes([1]) + val(SMALL, env_id) + val(INT, -1) + val(REAL, 1.0) + val(REAL, 0.0) + val(REAL, 1.0) + val(REAL, 0.0)

def iteration(it, js='{"iteration":0}'):
    return bytes([2]) + val(SMALL, it) + val(TEXT, js)

emb = struct.pack('<4f', 0.1, 0.2, 0.3, 0.4)
seeds = {
    'real_schema': bytes([0]) + env(1, 0, 'arith', '', 0.5, 0.9, 0.4, emb) + env(2, 0, 'arith', 'novelty', 0.0, 0.0, 0.0)
                   + env(3, 1, 'arith', '', 0.05, 0.2, 0.15) + play(1) + play(1) + iteration(0) + iteration(1),
    'loose_types': bytes([1 | 4]) + bytes([0]) + val(SMALL, 5) + val(TEXT, 'x') + val(INT, 7) + val(BLOB, b'\0\1')
                   + val(BLOB, b'src\0x') + val(REAL, 1e300) + val(NULL) + val(INT, 3) + val(BLOB, b'h')
                   + val(TEXT, 'nan') + val(INT, 1) + val(NULL) + val(TEXT, '0.5') + val(REAL, -1.0) + val(TEXT, 'emb'),
    'unversioned': bytes([2]) + env(1, 0, 'arith', '', 0.5, 0.9, 0.4),
    'family_walk': bytes([8 | 4 | 0x30]) + b''.join(env(i, i % 3, 'arith' if i % 2 else 'maze', '', i / 10, 0.9, 0.3) for i in range(1, 10)),
}
# Reproducers of fixed findings (fuzz/regress/archive/): a loose table's NULL text columns (read_row's strtoull(NULL)).
regress = {
    'null_text_columns': bytes([1]) + bytes([0]) + b''.join([val(SMALL, 1)] + [val(NULL)] * 14)
                         + env(2, 0, 'arith', '', 0.3, 0.7, 0.4),
}
here = os.path.dirname(os.path.abspath(__file__))
for sub, group in (('corpus', seeds), ('regress', regress)):
    out = os.path.join(here, sub, 'archive')
    os.makedirs(out, exist_ok=True)
    for name, b in group.items():
        with open(os.path.join(out, name), 'wb') as f: f.write(b)
    print(f'wrote {len(group)} inputs to {out}')
