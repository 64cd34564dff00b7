# core/sandbox/local.mk — build rules for core/sandbox/ (included by the top-level Makefile.am).
# The zygote, the locked-down worker processes, framed IPC and the vector env.
libspade_a_SOURCES += core/sandbox/sandbox.c core/sandbox/zygote.c core/sandbox/worker.c \
	core/sandbox/ipc.c core/sandbox/vecenv.c
noinst_HEADERS += core/sandbox/ipc.h core/sandbox/internal.h
