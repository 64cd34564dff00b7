# core/policy/cuda.mk — build rules for the CUDA backend (included by the top-level Makefile.am).
