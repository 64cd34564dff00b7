# bench/local.mk — build rules for bench/ (included by the top-level Makefile.am).

# bench_sandbox: hot-load, stepping and spawn cost of the sandbox beside
# references measured in the same run (gcc + dlopen, python3, plain fork).
# The gcc -O2 builds of the environments it steps in-process as the reference
# resolve the DSL helpers from the program, hence -Wl,--export-dynamic.
spade_bench_envs = bench/envs/trivial.so bench/envs/work20us.so bench/envs/bank.so
CLEANFILES += $(spade_bench_envs)
EXTRA_DIST += bench/envs/trivial.c bench/envs/work20us.c bench/bench_py_env.py bench/bench_servers.sh bench/bench_servers.py
# One explicit rule each: the sources live in two directories. stdenv/ sources
# are built by bench_sandbox itself at run time (gcc -O2, same flags), so that a
# stdenv file that is renamed or not there yet skips one line of the report
# instead of breaking the build.
$(spade_bench_envs): $(top_srcdir)/dsl/spade/dsl.h $(top_srcdir)/core/env.h
bench/envs/trivial.so: bench/envs/trivial.c
	@$(MKDIR_P) bench/envs
	$(AM_V_CC)$(SPADE_ENV_CC) -o $@ $(srcdir)/bench/envs/trivial.c
bench/envs/work20us.so: bench/envs/work20us.c
	@$(MKDIR_P) bench/envs
	$(AM_V_CC)$(SPADE_ENV_CC) -o $@ $(srcdir)/bench/envs/work20us.c
bench/envs/bank.so: tests/envs/bank.c
	@$(MKDIR_P) bench/envs
	$(AM_V_CC)$(SPADE_ENV_CC) -o $@ $(srcdir)/tests/envs/bank.c
noinst_PROGRAMS += bench/bench_sandbox
bench_programs += bench/bench_sandbox
bench_bench_sandbox_SOURCES = bench/bench_sandbox.c
bench_bench_sandbox_CPPFLAGS = $(AM_CPPFLAGS) -DSPADE_BUILDDIR='"$(abs_top_builddir)"'
bench_bench_sandbox_LDFLAGS = $(AM_LDFLAGS) -Wl,--export-dynamic
bench_bench_sandbox_LDADD = $(SPADE_LIBS)
EXTRA_bench_bench_sandbox_DEPENDENCIES = $(spade_bench_envs)

# bench_stepcost: a fixed amount of sandboxed stepping, for callgrind's
# instruction counts (bench/stepcost.sh runs it twice and takes the difference).
noinst_PROGRAMS += bench/bench_stepcost
bench_bench_stepcost_SOURCES = bench/bench_stepcost.c
bench_bench_stepcost_LDADD = $(SPADE_LIBS)
EXTRA_DIST += bench/stepcost.sh

# bench_grpo: what masked multi-turn GRPO costs (per-role norms, a masked
# episode against its turns as separate samples), ratios in one run.
bench_programs += bench/bench_grpo
noinst_PROGRAMS += bench/bench_grpo
bench_bench_grpo_SOURCES = bench/bench_grpo.c
bench_bench_grpo_LDADD = $(SPADE_LIBS)
# bench_attend: the decoding attention alone (a pass of 4 slots, L layers'
# caches), milliseconds a pass on a backend.
noinst_PROGRAMS += bench/bench_attend
bench_bench_attend_SOURCES = bench/bench_attend.c
bench_bench_attend_LDADD = $(SPADE_LIBS)

# bench_decode: episodes decoded together in one spade_decoder vs one at a
# time (core/policy/decode.c), in the same run.
bench_programs += bench/bench_decode
noinst_PROGRAMS += bench/bench_decode
bench_bench_decode_SOURCES = bench/bench_decode.c
bench_bench_decode_LDADD = $(SPADE_LIBS)
# bench_tokenizer: BPE compression of stdenv at several vocabularies, training
# time, and encode throughput beside the byte tokenizer and the reference encoder.
noinst_PROGRAMS += bench/bench_tokenizer
bench_programs += bench/bench_tokenizer
bench_bench_tokenizer_SOURCES = bench/bench_tokenizer.c
bench_bench_tokenizer_LDADD = $(SPADE_LIBS)
# bench_designer_base: how often a policy checkpoint, given designer prompts with
# a stdenv grounding excerpt, writes a source that compiles and passes spade
# check (docs/train.md). Needs a checkpoint, so `make bench` does not run it.
noinst_PROGRAMS += bench/bench_designer_base
bench_bench_designer_base_SOURCES = bench/bench_designer_base.c agent/transcript.c designer/prompt.c
bench_bench_designer_base_LDADD = $(SPADE_LIBS)
# bench_rollout: rollout throughput of the policy agent on stdenv (split of the
# wall time into model and environments, 32 live vs one at a time, OpenMP
# settings with a busy sandbox worker beside); each figure from a child process.
bench_programs += bench/bench_rollout
noinst_PROGRAMS += bench/bench_rollout
bench_bench_rollout_SOURCES = bench/bench_rollout.c agent/transcript.c agent/policy_agent.c
bench_bench_rollout_LDADD = $(SPADE_LIBS)

# bench_gates: the designer's gates and the paired plays of one environment
# (model time left out: a scripted agent), against one plain load, same run.
bench_programs += bench/bench_gates
noinst_PROGRAMS += bench/bench_gates
bench_bench_gates_SOURCES = bench/bench_gates.c designer/gates.c designer/gates_play.c designer/gates_determinism.c \
	designer/gates_agents.c designer/gates_novelty.c designer/corpus.c designer/plays.c designer/reward.c
bench_bench_gates_LDADD = $(SPADE_LIBS)
# bench_crn: the variance of paired-play regret over 100 replications with
# both arms on one sampling stream (common random numbers) and with the hint
# arm on its own, one fixed environment (bench/envs/crn_bit.c), same run.
bench_programs += bench/bench_crn
noinst_PROGRAMS += bench/bench_crn
bench_bench_crn_SOURCES = bench/bench_crn.c agent/transcript.c agent/policy_agent.c designer/plays.c designer/reward.c
bench_bench_crn_LDADD = $(SPADE_LIBS)
EXTRA_DIST += bench/envs/crn_bit.c
# bench_remote: requests/s of the remote policy's client at a concurrency;
# bench/bench_remote.sh runs it against llama.cpp's server beside a Python client.
noinst_PROGRAMS += bench/bench_remote
bench_programs += bench/bench_remote
bench_bench_remote_SOURCES = bench/bench_remote.c designer/remote_designer.c designer/prompt.c
bench_bench_remote_LDADD = $(SPADE_LIBS)
EXTRA_DIST += bench/bench_remote.sh
# bench_llama: a GGUF model's load, prefill, decoding (1 and 32 slots), shared
# prefix and training step; bench/bench_llama.sh runs it interleaved with
# llama.cpp (bench/llama_cpp_ref.py) and PyTorch (bench/torch_llama.py). Needs a
# model file, so `make bench` does not run it.
noinst_PROGRAMS += bench/bench_llama
bench_bench_llama_SOURCES = bench/bench_llama.c
bench_bench_llama_LDADD = $(SPADE_LIBS)
EXTRA_DIST += bench/bench_llama.sh bench/llama_cpp_ref.py bench/torch_llama.py bench/bench_q8.sh bench/q8_llama_ref.py
# bench_gemm: spade's own SGEMM (core/policy/gemm.c) against OpenBLAS's sgemm at
# OPENBLAS_CORETYPE unset, Prescott and Haswell in one run, and training steps.
bench_programs += bench/bench_gemm
noinst_PROGRAMS += bench/bench_gemm
bench_bench_gemm_SOURCES = bench/bench_gemm.c
bench_bench_gemm_LDADD = $(SPADE_LIBS)

# bench/bench_iteration.sh: the seconds of a self-play iteration on a pretrained
# model by phase (train.jsonl's time_s), through spade train itself; nothing to build.
EXTRA_DIST += bench/bench_iteration.sh
# bench_designer_chat: the designer's warm start measured (docs/train.md, "A
# warm start for the designer"): a model or checkpoint asked the loop's
# chat-form designer request for prompts of chosen families, each answer
# judged by compile, spade check, every gate and novelty against the prompt,
# with Wilson intervals. Needs a model, so `make bench` does not run it;
# tests/test_demos.sh runs it at toy size.
noinst_PROGRAMS += bench/bench_designer_chat
bench_bench_designer_chat_SOURCES = bench/bench_designer_chat.c $(selfplay_sources) $(designer_sources) \
	$(agent_sources)
bench_bench_designer_chat_LDADD = $(SPADE_LIBS)
