# selfplay/local.mk — the self-play loop (included by the top-level Makefile.am).
# It composes the roles: selfplay -> designer, agent -> core; neither role
# includes it, and core includes none of them.
selfplay_sources = selfplay/loop.c
noinst_HEADERS += selfplay/loop.h
spade_SOURCES += $(selfplay_sources)

TESTS += tests/test_selfplay.sh
EXTRA_DIST += tests/test_selfplay.sh
EXTRA_DIST += tests/envs/lp_mark.c
