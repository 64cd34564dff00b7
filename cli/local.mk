# cli/local.mk — the spade command-line program (cli → designer, agent → core),
# and the core parts the CLI owns (the checker and the registry) with their tests.
spade_SOURCES += cli/main.c

# core/check and core/registry live in the library: tests/test_stdenv.c and the
# designer call spade_check; the trainer hot-loads through the registry.
libspade_a_SOURCES += core/check.c core/registry.c
noinst_HEADERS += core/check.h core/registry.h
