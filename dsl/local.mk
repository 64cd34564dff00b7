# dsl/local.mk — build rules for dsl/ (included by the top-level Makefile.am).
# The runtime helpers environments call (say, rand_range, parse_int, ...) and the
# allowlist of symbols JIT-compiled environments may reach.
libspade_a_SOURCES += dsl/runtime.c
noinst_HEADERS += dsl/runtime.h
