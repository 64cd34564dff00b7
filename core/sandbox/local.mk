# core/sandbox/local.mk — build rules for core/sandbox/ (included by the top-level Makefile.am).
# The zygote, the locked-down worker processes, framed IPC and the vector env.
libspade_a_SOURCES += core/sandbox/sandbox.c core/sandbox/zygote.c core/sandbox/worker.c \
	core/sandbox/ipc.c core/sandbox/vecenv.c
noinst_HEADERS += core/sandbox/ipc.h core/sandbox/internal.h

# Tests of the sandbox (and core/jit). core/ is searched with -iquote so that
# <check.h> is Check's header, not core/check.h.
sandbox_test_cppflags = -include $(top_builddir)/config.h -I$(top_srcdir) -iquote $(top_srcdir)/core \
	-I$(top_srcdir)/dsl -DSPADE_SRCDIR='"$(abs_top_srcdir)"'
check_PROGRAMS += tests/test_ipc
TESTS += tests/test_ipc
tests_test_ipc_SOURCES = tests/test_ipc.c tests/testutil.c tests/testutil.h
tests_test_ipc_CPPFLAGS = $(sandbox_test_cppflags)
tests_test_ipc_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_ipc_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
EXTRA_DIST += tests/envs/sb_walk.c tests/envs/sb_moody.c
check_PROGRAMS += tests/test_sandbox
TESTS += tests/test_sandbox
tests_test_sandbox_SOURCES = tests/test_sandbox.c tests/testutil.c tests/testutil.h
tests_test_sandbox_CPPFLAGS = $(sandbox_test_cppflags)
tests_test_sandbox_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_sandbox_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
check_PROGRAMS += tests/test_vecenv
TESTS += tests/test_vecenv
tests_test_vecenv_SOURCES = tests/test_vecenv.c tests/testutil.c tests/testutil.h
tests_test_vecenv_CPPFLAGS = $(sandbox_test_cppflags)
tests_test_vecenv_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_test_vecenv_LDADD = $(SPADE_LIBS) $(CHECK_LIBS)
