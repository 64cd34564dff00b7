# agent/local.mk — build rules for agent/ (included by the top-level Makefile.am).
