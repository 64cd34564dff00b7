# cli/local.mk — the spade command-line program (cli → designer, agent → core).
spade_SOURCES += cli/main.c
