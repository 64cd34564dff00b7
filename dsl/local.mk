# dsl/local.mk — build rules for dsl/ (included by the top-level Makefile.am).
