# plugins/local.mk — build rules for plugins/ (included by the top-level Makefile.am).
