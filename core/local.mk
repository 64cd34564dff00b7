# core/local.mk — the engine both roles share (core never includes designer/ or agent/).
libspade_a_SOURCES += core/version.c
noinst_HEADERS += core/version.h
noinst_HEADERS += core/host.h core/sandbox/sandbox.h core/tools/tools.h dsl/spade/env.h
