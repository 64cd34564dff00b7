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
EXTRA_DIST += tests/envs/ep_len.c tests/envs/ep_record.c tests/envs/cli_bigret.c
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

EXTRA_DIST += tests/envs/digit_first.c tests/envs/two_turns.c

# spade demos, transcripts read back for pretraining, and source variants
# (cli/cmd_demos.c, cli/transcript_text.c, designer/variants.c).
check_PROGRAMS += tests/test_demos
TESTS += tests/test_demos tests/test_demos.sh
tests_test_demos_SOURCES = tests/test_demos.c cli/transcript_text.c designer/variants.c agent/transcript.c \
	tests/testutil.c tests/testutil.h
tests_test_demos_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_demos_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/test_demos.sh configs/base.ini configs/base-train.ini configs/base-data.sh configs/base-pool.txt
