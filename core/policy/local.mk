# core/policy/local.mk — build rules for core/policy/ (included by the top-level Makefile.am).
# The policy object: a GPT or a Llama (llama.c) with CPU (cblas/OpenMP, plain-C reference) and CUDA backends.
libspade_a_SOURCES += core/policy/backend.c core/policy/backend_cpu.c core/policy/gemm.c core/policy/tokenizer.c core/policy/tokenizer_train.c \
	core/policy/tokenizer_file.c core/policy/gpt.c core/policy/llama.c core/policy/lora.c core/policy/sample.c core/policy/checkpoint.c core/policy/grpo.c
# The decoding batch (slots with persistent KV caches; spade_policy_sample uses it).
libspade_a_SOURCES += core/policy/decode.c
# policy.sample_weights = q8_0: 8-bit weights and their dot-product kernels for the decoding batch.
libspade_a_SOURCES += core/policy/q8.c core/policy/sample_q8.c
noinst_HEADERS += core/policy/q8.h
# The decoding step's helper threads (a team that never waits for a thread that took no work).
libspade_a_SOURCES += core/policy/team.c
noinst_HEADERS += core/policy/team.h
check_PROGRAMS += tests/test_q8
TESTS += tests/test_q8
tests_test_q8_SOURCES = tests/test_q8.c tests/testutil.c tests/testutil.h
tests_test_q8_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_q8_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
# The GGUF tokenizer (byte-level BPE with the named pre-tokenizers) and ChatML.
libspade_a_SOURCES += core/policy/bpe.c
# A pretrained model's tokenizer as the "gguf" kind, and the GGUF model loader (pretrained.h).
libspade_a_SOURCES += core/policy/tokenizer_gguf.c core/policy/gguf_load.c
# The inverse: a Llama-family policy back to a GGUF file llama.cpp loads (spade export).
libspade_a_SOURCES += core/policy/gguf_export.c
noinst_HEADERS += core/policy/pretrained.h
noinst_HEADERS += core/policy/gemm.h
noinst_HEADERS += core/policy/backend.h core/policy/policy.h core/policy/tokenizer.h \
	core/policy/gpt_internal.h core/policy/tokenizer_internal.h core/policy/bpe.h core/policy/bpe_unicode.h

# CUDA: configure's HAVE_CUDA says nvcc + cuBLAS exist; core/policy/cuda.mk then builds
# core/policy/backend_cuda.cu into libspade.a. POLICY_CUDA_CPPFLAGS would hold
# -DSPADE_POLICY_NO_CUDA to leave the backend out (see backend.h); it is empty now.
POLICY_CUDA_CPPFLAGS =
AM_CPPFLAGS += $(POLICY_CUDA_CPPFLAGS)

# spade's own SGEMM (core/policy/gemm.c), every kernel this CPU runs, against a double reference.
check_PROGRAMS += tests/test_gemm
TESTS += tests/test_gemm
tests_test_gemm_SOURCES = tests/test_gemm.c tests/testutil.c tests/testutil.h
tests_test_gemm_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_gemm_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/test_policy
TESTS += tests/test_policy
tests_test_policy_SOURCES = tests/test_policy.c tests/testutil.c tests/testutil.h
tests_test_policy_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_policy_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

bench_programs += bench/bench_policy
noinst_PROGRAMS += bench/bench_policy
bench_bench_policy_SOURCES = bench/bench_policy.c
bench_bench_policy_LDADD = $(SPADE_LIBS)

# `spade pretrain` (cli/cmd_pretrain.c) is linked into its test directly; the lead
# adds it to spade_SOURCES.
check_PROGRAMS += tests/test_policy_pretrain
TESTS += tests/test_policy_pretrain
tests_test_policy_pretrain_SOURCES = tests/test_policy_pretrain.c tests/testutil.c tests/testutil.h cli/cmd_pretrain.c
tests_test_policy_pretrain_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_policy_pretrain_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += cli/cmd_pretrain.h

# The tokenizers (bytes, BPE) and their place in checkpoints.
check_PROGRAMS += tests/test_tokenizer
TESTS += tests/test_tokenizer
tests_test_tokenizer_SOURCES = tests/test_tokenizer.c tests/testutil.c tests/testutil.h
tests_test_tokenizer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_tokenizer_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/data
# The training attention: the tiled (linear-memory) ops against the T x T reference.
check_PROGRAMS += tests/test_attention
TESTS += tests/test_attention
tests_test_attention_SOURCES = tests/test_attention.c tests/testutil.c tests/testutil.h
tests_test_attention_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_attention_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
# spade against eager PyTorch (run by hand: bench/bench_vs_torch.sh, BENCHMARKS.md)
EXTRA_DIST += bench/bench_vs_torch.sh bench/torch_gpt.py
# GGUF model files (gguf.h: the hostile-input reader, dequantization, the writer),
# the SHA-256 that pins downloaded models, and the known models (models.h).
libspade_a_SOURCES += core/policy/gguf.c core/sha256.c core/policy/models.c
noinst_HEADERS += core/policy/gguf.h core/sha256.h core/policy/models.h
check_PROGRAMS += tests/test_gguf
TESTS += tests/test_gguf
tests_test_gguf_SOURCES = tests/test_gguf.c fuzz/fuzz_gguf.c tests/testutil.c tests/testutil.h
tests_test_gguf_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_gguf_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

# The Llama family (llama.c): its ops, gradients, decoding, checkpoints and a
# pretrain run through cli/cmd_pretrain.c, linked in as test_policy_pretrain does.
check_PROGRAMS += tests/test_llama
TESTS += tests/test_llama
tests_test_llama_SOURCES = tests/test_llama.c tests/testutil.c tests/testutil.h cli/cmd_pretrain.c \
	cli/transcript_text.c cli/util.c
tests_test_llama_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_llama_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

# The GGUF tokenizer against llama.cpp (fixtures from tools/bpe_reference.py) and ChatML.
check_PROGRAMS += tests/test_bpe
TESTS += tests/test_bpe
tests_test_bpe_SOURCES = tests/test_bpe.c tests/testutil.c tests/testutil.h
tests_test_bpe_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_bpe_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tools/gen_unicode_table.py tools/bpe_reference.py

# Tiny random Llama and Qwen2 GGUF files the tests write themselves (tests/tiny_gguf.h),
# and spade export's round trip through them, SmolLM2 and llama.cpp (tests/test_export.sh).
check_PROGRAMS += tests/make_tiny_gguf
tests_make_tiny_gguf_SOURCES = tests/make_tiny_gguf.c tests/tiny_gguf.c tests/tiny_gguf.h
tests_make_tiny_gguf_LDADD = $(SPADE_LIBS)
check_PROGRAMS += tests/test_tiny_gguf
TESTS += tests/test_tiny_gguf tests/test_export.sh
tests_test_tiny_gguf_SOURCES = tests/test_tiny_gguf.c tests/tiny_gguf.c tests/tiny_gguf.h tests/testutil.c \
	tests/testutil.h
tests_test_tiny_gguf_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_tiny_gguf_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/test_export.sh

# LoRA adapters and the weights-only policy (core/policy/lora.c), on the tiny GGUF models.
check_PROGRAMS += tests/test_lora
TESTS += tests/test_lora tests/test_lora.sh
EXTRA_DIST += tests/test_lora.sh
tests_test_lora_SOURCES = tests/test_lora.c tests/tiny_gguf.c tests/tiny_gguf.h tests/testutil.c tests/testutil.h
tests_test_lora_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_lora_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
