# bench/local.mk — build rules for bench/ (included by the top-level Makefile.am).
