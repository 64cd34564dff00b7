# tests/local.mk — build rules for tests/ (included by the top-level Makefile.am).

# The hostile programs: C sources the sandbox must contain, each declaring its
# expected outcome on its first line; test_hostile runs them all (docs/sandbox.md).
check_PROGRAMS += tests/test_hostile
TESTS += tests/test_hostile
tests_test_hostile_SOURCES = tests/test_hostile.c tests/testutil.c
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_hostile_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/hostile

# The episode layer and core's agents (core/episodes.h, core/agents.h).
check_PROGRAMS += tests/test_episodes
TESTS += tests/test_episodes
tests_test_episodes_SOURCES = tests/test_episodes.c tests/testutil.c tests/testutil.h
tests_test_episodes_CPPFLAGS = $(sandbox_test_cppflags)
tests_test_episodes_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_episodes_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/envs/ep_len.c tests/envs/ep_record.c tests/envs/ep_hintcrash.c tests/envs/cli_bigret.c
# The decoding batch (core/policy/decode.c): slots with persistent KV caches.
check_PROGRAMS += tests/test_decode
TESTS += tests/test_decode
tests_test_decode_SOURCES = tests/test_decode.c tests/testutil.c tests/testutil.h
tests_test_decode_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_decode_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
# Masked multi-turn GRPO (core/policy/grpo.c): cpu_ref exactness tests.
check_PROGRAMS += tests/test_grpo
TESTS += tests/test_grpo
tests_test_grpo_SOURCES = tests/test_grpo.c tests/testutil.c tests/testutil.h
tests_test_grpo_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_grpo_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

EXTRA_DIST += tests/envs/digit_first.c tests/envs/two_turns.c tests/envs/vec_resethang.c
EXTRA_DIST += tests/envs/hint_fixed.c tests/envs/hint_seedreturn.c
# The Python package (python/) and `spade serve` (docs/protocol.md, docs/python.md): pytest in
# the .venv ./bootstrap makes; skipped with the reason when there is none.
TESTS += tests/test_python.sh
EXTRA_DIST += tests/test_python.sh tests/python/conftest.py tests/python/test_env.py tests/python/test_vector.py \
	tests/python/test_protocol.py tests/python/test_docs.py python/pyproject.toml python/README.md \
	python/spade/__init__.py python/spade/_client.py python/spade/env.py python/spade/vector.py python/spade/py.typed \
	bench/bench_py_vec.py
# Every spade command shown in README.md and docs/*.md, run as a reader types it
# (found automatically; the few that cannot run here are skipped with a reason).
TESTS += tests/test_docs.sh
# The remote policy against llama.cpp's server and a loopback stub (docs/scale.md); skips without them.
TESTS += tests/test_remote.sh
EXTRA_DIST += tests/test_remote.sh tests/remote_stub.py
# The served agent's reasoning budget against the loopback stub (agent/remote_agent.c); python3 only.
TESTS += tests/test_remote_agent.sh
EXTRA_DIST += tests/test_remote_agent.sh
EXTRA_DIST += tests/test_docs.sh
# One layout for the tree's C (tools/format.sh check; skipped where clang-format is not 14).
TESTS += tests/test_format.sh
EXTRA_DIST += tests/test_format.sh
# The baseline (SSE2) clones of the CPU kernels, run under qemu-x86_64 -cpu Nehalem (skipped without it).
TESTS += tests/test_baseline_isa.sh
EXTRA_DIST += tests/test_baseline_isa.sh
# `spade report` (cli/cmd_report.c): report.md and SVG plots of micro runs, error cases.
TESTS += tests/test_report.sh
EXTRA_DIST += tests/test_report.sh configs/compare-arms.sh
check_PROGRAMS += tests/test_report_svg
TESTS += tests/test_report_svg
tests_test_report_svg_SOURCES = tests/test_report_svg.c cli/report_svg.c tests/testutil.c tests/testutil.h
tests_test_report_svg_CPPFLAGS = $(AM_CPPFLAGS) -iquote $(top_srcdir)/cli
tests_test_report_svg_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_report_svg_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

# spade demos, transcripts read back for pretraining, and source variants
# (cli/cmd_demos.c, cli/transcript_text.c, designer/variants.c).
check_PROGRAMS += tests/test_demos
TESTS += tests/test_demos tests/test_demos.sh
tests_test_demos_SOURCES = tests/test_demos.c cli/transcript_text.c designer/variants.c agent/transcript.c \
	tests/testutil.c tests/testutil.h tests/tiny_gguf.c tests/tiny_gguf.h
tests_test_demos_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_demos_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/tap.sh tests/killpoints.sh tests/test_demos.sh configs/base.ini configs/base-train.ini configs/base-data.sh configs/base-pool.txt configs/base-curriculum.ini configs/default-fixed.ini configs/warmstart-data.sh configs/warmstart-smollm2.ini configs/warmstart-qwen.ini configs/warmstart-agent-data.sh configs/warmstart-agent-smollm2.ini
# spade's OpenMP wait-policy default is honoured, overridable, and changes no result.
TESTS += tests/test_threads.sh
EXTRA_DIST += tests/test_threads.sh

# spade check: a timeout in the middle of a batch of episodes (tests/test_check.c)
EXTRA_DIST += tests/envs/check_latehang.c

# The hint-literate base recipe (configs/base-hint*.{sh,ini}, hint-template.ini,
# template-table.py) at toy size: data, pretraining, 2 template iterations.
TESTS += tests/test_hintbase.sh
EXTRA_DIST += tests/test_hintbase.sh configs/base-hint.ini configs/base-hint-data.sh configs/cups-fill.sh configs/hint-template.ini configs/template-table.py
