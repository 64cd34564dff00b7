# designer/local.mk — build rules for designer/ (included by the top-level Makefile.am).
# The designer role: the grounding corpus (corpus), the prompt within a token
# budget (prompt), and the reward arithmetic (reward). designer/ may include
# core/; core never includes designer/.
designer_sources = designer/corpus.c designer/prompt.c designer/reward.c
designer_sources += designer/variants.c
noinst_HEADERS += designer/variants.h
noinst_HEADERS += designer/corpus.h designer/prompt.h designer/reward.h
spade_SOURCES += $(designer_sources)

check_PROGRAMS += tests/test_designer
TESTS += tests/test_designer
tests_test_designer_SOURCES = tests/test_designer.c $(designer_sources) tests/testutil.c tests/testutil.h
tests_test_designer_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_designer_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
