#!/usr/bin/env python3
"""bpe_reference.py -- dumps a GGUF model's tokenizer to spade's vocabulary
fixture and records llama.cpp's token ids for a fixed set of texts, so that
tests/test_bpe.c can check core/policy/bpe.c byte for byte against llama.cpp.

What it is: a developer tool, run by hand in a venv that has `gguf` and
`llama-cpp-python` (docs/policy.md, "GGUF tokenizers", says how to make one;
LLAMA_CPP_LIB_PATH may point its bindings at a libllama.so built elsewhere):

    python tools/bpe_reference.py MODEL.gguf --vocab OUT.vocab --ref OUT.ref [--srcdir .] [--fuzz N] [--builtin-only]

--vocab writes tokenizer.ggml.{tokens,token_type,merges,pre,bos/eos_token_id,
add_bos/add_eos_token} in the fixture format spade_bpe_load reads; --ref
writes, per case, the text (escaped) and the ids of
llama_cpp.Llama(vocab_only=True).tokenize(text, add_bos=..., special=...).
The cases: prose, C sources, Unicode (CJK, emoji, accents, combining marks,
odd spaces), long whitespace and digit runs, special-token texts, invalid
UTF-8, and every stdenv/*.c file under --srcdir. Each case carries its text,
so the fixture does not go stale when those files change.
What it is not: part of the build or the tests (they read its output only).

Both files are line-oriented; texts escape \\\\, \\n, \\r, \\t, the other
control bytes and bytes that are not UTF-8 as \\xHH.
"""
import argparse
import glob
import os
import sys


def esc(b):
    s = b.decode("utf-8", errors="surrogateescape")
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append("\\x%02x" % o)
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8
            out.append("\\x%02x" % (o - 0xDC00))
        elif 0xD800 <= o <= 0xDFFF or o in (0x2028, 0x2029, 0x85):
            # keep the fixture's lines lines: encode the character's bytes
            out.append("".join("\\x%02x" % c for c in ch.encode("utf-8", errors="surrogatepass")))
        else:
            out.append(ch)
    return "".join(out)


def field(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    return f


def dump_vocab(path, out):
    import gguf

    r = gguf.GGUFReader(path)
    tok = r.fields["tokenizer.ggml.tokens"]
    toks = [bytes(tok.parts[i]) for i in tok.data]
    tt = field(r, "tokenizer.ggml.token_type")
    types = [int(tt.parts[i][0]) for i in tt.data] if tt else [1] * len(toks)
    mg = field(r, "tokenizer.ggml.merges")
    merges = [bytes(mg.parts[i]) for i in mg.data] if mg else []

    def scalar(key):
        f = field(r, key)
        return None if f is None else f.parts[f.data[0]].tolist()[0]

    pre = field(r, "tokenizer.ggml.pre")
    with open(out, "w", encoding="utf-8", newline="\n") as o:
        o.write("spade-bpe-vocab 1\n")
        o.write("pre %s\n" % (bytes(pre.parts[pre.data[0]]).decode() if pre else "gpt2"))
        for key, name in (("bos_token_id", "bos"), ("eos_token_id", "eos")):
            v = scalar("tokenizer.ggml." + key)
            if v is not None:
                o.write("%s %d\n" % (name, v))
        for key, name in (("add_bos_token", "add_bos"), ("add_eos_token", "add_eos")):
            v = scalar("tokenizer.ggml." + key)
            if v is not None:
                o.write("%s %d\n" % (name, 1 if v else 0))
        o.write("tokens %d\n" % len(toks))
        for t, ty in zip(toks, types):
            o.write("%d %s\n" % (ty, esc(t)))
        o.write("merges %d\n" % len(merges))
        for m in merges:
            o.write(esc(m) + "\n")


C_SOURCE = b"""/* A comment */
#include <stdio.h>
static int add(int a, int b) { return a + b; }

int main(int argc, char **argv)
{
\tfor (int i = 0; i < 10; i++) {
\t\tprintf("%d: %s\\n", i, argv[0]);   // trailing
\t}
    if (argc > 1 && argv[1][0] == '-') return 2;
    return add(40, 2) == 42 ? 0 : 1;
}
"""

PROSE = (b"The quick brown fox jumps over the lazy dog. I'm sure you'll agree: it's what they've done, "
         b"and we'd like it. DON'T SHOUT, WE'LL HEAR YOU'RE THERE. \"Quoted\" (parens) [brackets] {braces}; "
         b"semi-colons, commas... ellipses! Questions? e-mail: a.b@example.com, https://example.org/x?y=1&z=2 "
         b"-- dashes --- and ~tildes~ ^carets^ |pipes| 50% off $10.99 #hash @at")

UNICODE = ("Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe. e\u0301 a\u0308 n\u0303 (combining) "
           "\u4f60\u597d\uff0c\u4e16\u754c\uff01 \u3053\u3093\u306b\u3061\u306f\u4e16\u754c \uc548\ub155\ud558\uc138\uc694 "
           "\u041f\u0440\u0438\u0432\u0435\u0442 \u03b1\u03b2\u03b3 \u0645\u0631\u062d\u0628\u0627 \u0928\u092e\u0938\u094d\u0924\u0947 "
           "\U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f \U0001F1EB\U0001F1F7 "
           "x\u00b2 \u00bd \u216b \u0660\u0661\u0662 nbsp\u00a0here ideographic\u3000space em\u2003space "
           "\u2018quotes\u2019 \u201cdouble\u201d \u2014 \u2026 \u20ac100 \u00a9 \u2122 \U0001D400\U0001D401").encode()

CASES = [
    ("empty", b"", 0),
    ("one-letter", b"a", 0),
    ("prose", PROSE, 0),
    ("c-source", C_SOURCE, 0),
    ("crlf", b"line one\r\nline two\r\n\r\n  indented\r\n", 0),
    ("unicode", UNICODE, 0),
    ("spaces-1000", b" " * 1000, 0),
    ("spaces-then-word", b" " * 300 + b"word" + b" " * 7 + b"x", 0),
    ("tabs-mixed", b"\t \t  \t\t   x\t\ty \t\n\t\n", 0),
    ("newlines", b"\n" * 60 + b"a" + b"\n \n  \n   \n" + b"b\n\n\n", 0),
    ("trailing-space", b"end with spaces   ", 0),
    ("digits-200", b"1234567890" * 20, 0),
    ("numbers", b"3.14159 1,000,000 0x1F 1e-9 2024-01-31 v1.2.3 #42 x1y22z333w4444", 0),
    ("contractions", b"it's IT'S It'S we'll WE'LL they've THEY'VE I'd I'D you're 's 't 're", 0),
    ("specials-as-text", b"<|im_start|>user\nhello<|im_end|>\n<|endoftext|>", 0),
    ("specials-parsed", b"<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\nhi there<|im_end|>", 2),
    ("specials-adjacent", b"<|im_end|><|im_end|>x<|im_start|><|im_start|>", 2),
    ("add-special", b"Hello world", 1),
    ("invalid-utf8", b"ok \xff\xfe bad \xc3\x28 trunc \xe2\x82 end\xf0\x9f\x98 \x80\x80 fine", 0),
    ("nul-and-controls", b"a\x00b\x01c\x1bd\x7f e", 0),
    ("long-word", b"supercalifragilisticexpialidocious" * 30, 0),
    ("punct-run", b"!!!???...,,,;;;:::" * 10 + b"\n\n", 0),
]


def llama_tokenizer(path):
    """llama.cpp's tokenizer for the GGUF at path, through llama-cpp-python's
    bindings: what llama_cpp.Llama(vocab_only=True).tokenize(text, add_bos,
    special) calls, without the high-level class (whose chat-template and
    cache modules a reference run does not need)."""
    import ctypes

    import llama_cpp.llama_cpp as ll

    ll.llama_backend_init()
    params = ll.llama_model_default_params()
    params.vocab_only = True
    model = ll.llama_model_load_from_file(path.encode(), params)
    if not model:
        sys.exit("%s: llama.cpp could not load it" % path)
    vocab = ll.llama_model_get_vocab(model)

    def tokenize(text, add_special, parse_special):
        n = len(text) + 16
        while True:
            buf = (ll.llama_token * n)()
            k = ll.llama_tokenize(vocab, text, len(text), buf, n, add_special, parse_special)
            if k >= 0:
                return list(buf[:k])
            n = -k

    tokenize.keep = (model, ctypes)  # the model lives as long as the function
    return tokenize


def fuzz_cases(n, seed=7):
    """n random texts built from pieces that sit on the matchers' edges
    (apostrophes, digits of every script, combining marks, odd spaces,
    unassigned and private code points, bytes that are not UTF-8)."""
    import random

    pieces = [" ", "  ", "\n", "\r\n", "\t", "\r", "a", "Ab", "x", "hello", "'s", "'S", "'re", "'LL", "'", "1", "12",
              "345", "\u0663", "\u00b2", "\u00bd", "\u00e9", "e\u0301", "\u0301", "\u65e5\u672c", "\u8a9e",
              "\ud55c\uad6d", "\U0001F600", "\U0001F44D\U0001F3FD", "\u200d", "\u00a0", "\u3000", "\u2003",
              "\u2028", "\u0085", "!", "?!", "...", "(", ")", "{", "}", ";", "->", "==", "#", "/*", "*/", "\\", "\"",
              "_", "-", "$", "@", "\x00", "\x0b", "\x0c", "\u0378", "\U000E0001", "\ufeff", "\u00df", "\u03a3",
              "\u01c5", "\u2177", "\U0001D7D8", "\ue000"]
    bad = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\x80", b"\x80"]
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        parts = []
        for _ in range(rnd.randint(1, 80)):
            parts.append(rnd.choice(bad) if rnd.random() < 0.03 else rnd.choice(pieces).encode())
        out.append(("fuzz%d" % i, b"".join(parts), rnd.choice([0, 0, 2])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--vocab")
    ap.add_argument("--ref")
    ap.add_argument("--srcdir", default=".")
    ap.add_argument("--fuzz", type=int, default=0, help="add this many random edge-case texts")
    ap.add_argument("--builtin-only", action="store_true",
                    help="only the built-in texts, not the tree's files (for a vocabulary tried under another pre-tokenizer)")
    a = ap.parse_args()
    if a.vocab:
        dump_vocab(a.model, a.vocab)
    if a.ref:
        tokenize = llama_tokenizer(a.model)
        cases = list(CASES) + fuzz_cases(a.fuzz)
        for name in [] if a.builtin_only else ("dsl/spade/dsl.h", "core/policy/tokenizer.c"):
            p = os.path.join(a.srcdir, name)
            if os.path.exists(p):
                cases.append(("file:" + name, open(p, "rb").read(), 0))
        for p in [] if a.builtin_only else sorted(glob.glob(os.path.join(a.srcdir, "stdenv", "*.c"))):
            cases.append(("stdenv:" + os.path.basename(p), open(p, "rb").read(), 0))
        with open(a.ref, "w", encoding="utf-8", newline="\n") as o:
            o.write("spade-bpe-ref 1\n")
            o.write("cases %d\n" % len(cases))
            for name, text, flags in cases:
                ids = tokenize(text, bool(flags & 1), bool(flags & 2))
                o.write("case %s %d\n" % (name, flags))
                o.write("text %s\n" % esc(text))
                o.write("ids %s\n" % " ".join(str(i) for i in ids))
        print("%s: %d cases" % (a.ref, len(cases)), file=sys.stderr)


if __name__ == "__main__":
    main()
