# core/jit/local.mk — build rules for core/jit/ (included by the top-level Makefile.am).
# libtcc compile of environment source; <spade/env.h> and <spade/dsl.h> are
# embedded into the binary by embed.sh (generated into the build directory, so
# VPATH builds and make distcheck work).
libspade_a_SOURCES += core/jit/jit.c
noinst_HEADERS += core/jit/jit.h
nodist_libspade_a_SOURCES += core/jit/jit_headers.c
BUILT_SOURCES += core/jit/jit_headers.c
CLEANFILES += core/jit/jit_headers.c
EXTRA_DIST += core/jit/embed.sh

core/jit/jit_headers.c: $(top_srcdir)/core/env.h $(top_srcdir)/dsl/spade/dsl.h $(top_srcdir)/core/jit/embed.sh
	$(AM_V_GEN)$(MKDIR_P) core/jit && \
	$(SHELL) $(top_srcdir)/core/jit/embed.sh $(top_srcdir)/core/env.h $(top_srcdir)/dsl/spade/dsl.h > $@-t && \
	mv -f $@-t $@
