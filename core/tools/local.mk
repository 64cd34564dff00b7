# core/tools/local.mk — build rules for core/tools/ (included by the top-level Makefile.am).
