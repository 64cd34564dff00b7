# core/sandbox/local.mk — build rules for core/sandbox/ (included by the top-level Makefile.am).
