# stdenv/local.mk — build rules for stdenv/ (included by the top-level Makefile.am).
