# agent/local.mk — build rules for agent/ (included by the top-level Makefile.am).
# The agent role: the transcript format (transcript), the policy as an agent of
# the episode layer (policy_agent), the fixed pool (pool) and one iteration of
# agent RL on it (rl). agent/ may include core/; core never includes agent/.
agent_sources = agent/transcript.c agent/policy_agent.c agent/remote_agent.c agent/pool.c agent/rl.c agent/eval.c \
	agent/curriculum.c
noinst_HEADERS += agent/transcript.h agent/policy_agent.h agent/remote_agent.h agent/pool.h agent/rl.h agent/eval.h \
	agent/curriculum.h
spade_SOURCES += $(agent_sources)

check_PROGRAMS += tests/test_agent
TESTS += tests/test_agent
tests_test_agent_SOURCES = tests/test_agent.c $(agent_sources) tests/testutil.c tests/testutil.h
tests_test_agent_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_agent_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
TESTS += tests/test_train.sh
EXTRA_DIST += tests/test_train.sh tests/envs/cur_step.c
EXTRA_DIST += tests/envs/cur_coin.c

# The roles' turns on a chat model (core/chat.h): ChatML transcripts of both roles
# with a pretrained model's tokens, on a tiny GGUF model the test writes itself
# (and the template designer's context check on it: selfplay/template.c).
check_PROGRAMS += tests/test_chat
TESTS += tests/test_chat
tests_test_chat_SOURCES = tests/test_chat.c $(agent_sources) designer/prompt.c designer/template.c selfplay/template.c \
	tests/testutil.c tests/testutil.h
tests_test_chat_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_chat_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
TESTS += tests/test_chat.sh
EXTRA_DIST += tests/test_chat.sh configs/compare-arms-smollm2.sh
