# core/tools/local.mk — build rules for core/tools/ (included by the top-level Makefile.am).
libspade_a_SOURCES += core/tools/tools.c core/tools/call.c core/tools/bind.c core/tools/signature.c
noinst_HEADERS += core/tools/internal.h

check_PROGRAMS += tests/test_tools
TESTS += tests/test_tools
tests_test_tools_SOURCES = tests/test_tools.c tests/testutil.c tests/testutil.h
# -iquote, not -I, for core/: core/check.h (the environment checker) would
# otherwise shadow Check's <check.h>.
tests_test_tools_CPPFLAGS = -include $(top_builddir)/config.h -I$(top_srcdir) -iquote $(top_srcdir)/core \
	-I$(top_srcdir)/dsl -DSPADE_SRCDIR='"$(abs_top_srcdir)"'
tests_test_tools_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_tools_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)

noinst_PROGRAMS += bench/bench_tools
bench_programs += bench/bench_tools
bench_bench_tools_SOURCES = bench/bench_tools.c
bench_bench_tools_LDADD = $(SPADE_LIBS)
