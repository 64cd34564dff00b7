# plugins/local.mk — the example plugins (included by the top-level Makefile.am).
# plugins/ is where users write environments (`spade new NAME` starts one here);
# the examples show the DSL off and are installed to $(pkgdatadir)/plugins so an
# installed spade finds them too. Like stdenv/, they are data, never linked in;
# tests/test_stdenv checks every .c file of this directory.
pluginsdir = $(pkgdatadir)/plugins
plugins_DATA = plugins/shop.c plugins/codebreak.c plugins/bandit.c
EXTRA_DIST += $(plugins_DATA)
