# tests/local.mk — build rules for tests/ (included by the top-level Makefile.am).

# The hostile programs: C sources the sandbox must contain, each declaring its
# expected outcome on its first line; test_hostile runs them all (docs/sandbox.md).
check_PROGRAMS += tests/test_hostile
TESTS += tests/test_hostile
tests_test_hostile_SOURCES = tests/test_hostile.c
tests_test_hostile_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_hostile_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/hostile
# core/ is searched with -iquote, not -I, so <check.h> is Check's header and not
# core/check.h (the environment checker); "host.h" etc. still resolve.
tests_test_hostile_CPPFLAGS = -include $(top_builddir)/config.h -I$(top_srcdir) -iquote $(top_srcdir)/core \
	-I$(top_srcdir)/dsl -DSPADE_SRCDIR='"$(abs_top_srcdir)"'
