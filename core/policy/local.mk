# core/policy/local.mk — build rules for core/policy/ (included by the top-level Makefile.am).
