# core/jit/local.mk — build rules for core/jit/ (included by the top-level Makefile.am).
