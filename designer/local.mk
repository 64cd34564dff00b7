# designer/local.mk — build rules for designer/ (included by the top-level Makefile.am).
