# core/policy/local.mk — build rules for core/policy/ (included by the top-level Makefile.am).
# The policy object: a GPT with CPU (cblas/OpenMP, plain-C reference) and CUDA backends.
noinst_HEADERS += core/policy/backend.h
