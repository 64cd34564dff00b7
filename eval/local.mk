# eval/local.mk — the held-out evaluation suite (included by the top-level Makefile.am).
# Data like stdenv/: C sources compiled at run time, installed to
# $(pkgdatadir)/eval/heldout with the HELDOUT marker that core/heldout.h's guard
# looks for. tests/test_stdenv checks every file (checker, SOLVE across params);
# tests/test_heldout checks that the suite stays out of the search path and the corpus.
heldoutdir = $(pkgdatadir)/eval/heldout
heldout_envs = \
	eval/heldout/base_convert.c eval/heldout/clock_add.c eval/heldout/high_low.c \
	eval/heldout/lights_row.c eval/heldout/run_length.c eval/heldout/pancake.c \
	eval/heldout/pantry.c eval/heldout/robot_program.c eval/heldout/rpn_eval.c \
	eval/heldout/thermostat.c eval/heldout/treasure_dist.c eval/heldout/water_jugs.c
heldout_DATA = eval/heldout/HELDOUT $(heldout_envs)
EXTRA_DIST += $(heldout_DATA)

check_PROGRAMS += tests/test_heldout
TESTS += tests/test_heldout
tests_test_heldout_SOURCES = tests/test_heldout.c tests/testutil.c tests/testutil.h
tests_test_heldout_CPPFLAGS = $(AM_CPPFLAGS) -DSPADE_HELDOUT_FILES='"$(heldout_envs)"'
tests_test_heldout_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_heldout_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
