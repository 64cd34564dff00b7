# stdenv/local.mk — the hand-written environments (included by the top-level Makefile.am).
# They are data, not part of the binary: C sources the sandbox JIT-compiles at run
# time, installed to $(pkgdatadir)/stdenv where the registry and the designer's
# grounding corpus find them. tests/test_stdenv checks every one of them.
stdenvdir = $(pkgdatadir)/stdenv
stdenv_DATA = \
	stdenv/maze.c stdenv/key_door.c stdenv/push.c stdenv/fog_maze.c \
	stdenv/calc_chain.c stdenv/kv_chain.c stdenv/fs_backup.c stdenv/bank.c \
	stdenv/carry_add.c stdenv/linear.c stdenv/modpow.c stdenv/sequence.c \
	stdenv/sort_compare.c stdenv/hanoi.c stdenv/nim.c stdenv/latin.c \
	stdenv/odd_one.c stdenv/repeat.c stdenv/analogy.c stdenv/matrix.c stdenv/classify.c \
	stdenv/knapsack.c stdenv/change.c stdenv/min_path.c stdenv/assign.c stdenv/tour.c \
	stdenv/liars.c stdenv/clues.c stdenv/ranking.c stdenv/switches.c stdenv/weighing.c \
	stdenv/recall.c stdenv/pairs.c stdenv/n_back.c stdenv/tally.c stdenv/simon.c \
	stdenv/coin_row.c stdenv/tictactoe.c stdenv/rps.c stdenv/race.c stdenv/cop.c
EXTRA_DIST += $(stdenv_DATA)

# tests/test_stdenv: every installed environment (stdenv and the example
# plugins) passes the checker, and its SOLVE wins across the param range.
check_PROGRAMS += tests/test_stdenv
TESTS += tests/test_stdenv
tests_test_stdenv_SOURCES = tests/test_stdenv.c tests/testutil.c tests/testutil.h
tests_test_stdenv_CPPFLAGS = $(AM_CPPFLAGS) -DSPADE_ENV_FILES='"$(stdenv_DATA) $(plugins_DATA) $(heldout_envs)"'
tests_test_stdenv_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_stdenv_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
