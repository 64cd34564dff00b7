# core/policy/cuda.mk — build rules for the CUDA backend (included by the top-level Makefile.am).
# backend_cuda.cu and bench/gpu_check.sh (its checks for a GPU machine) are always distributed;
# nvcc compiles the .cu only when configure found nvcc and cuBLAS (HAVE_CUDA), into the
# loadable module spade-cuda.so (cuBLAS and cudart linked into it, not into any program):
# core/policy/cuda_module.c dlopens it when a CUDA backend is asked for (backend = cuda) or
# auto finds the NVIDIA driver, so a CPU run never maps cuBLAS (~200 MB RSS at every start).
# Installed in $(pkglibexecdir) beside spade-zygote. Automake has no rule for .cu files, so
# the rules are written out here; they work in a VPATH build.
EXTRA_DIST += core/policy/backend_cuda.cu bench/gpu_check.sh
libspade_a_SOURCES += core/policy/cuda_module.c

if HAVE_CUDA
nodist_pkglibexec_SCRIPTS = spade-cuda.so
CLEANFILES += core/policy/backend_cuda.$(OBJEXT) spade-cuda.so
# -z defs: every symbol the module uses is in its own libraries, none is taken from the program
spade-cuda.so: core/policy/backend_cuda.$(OBJEXT)
	$(AM_V_CCLD)$(CC) -shared -Wl,-z,defs -o $@ core/policy/backend_cuda.$(OBJEXT) $(CUDA_LIBS) -lm

# The host side is built without C++ exceptions and thread-safe statics, so the object
# needs no libstdc++ and links with the C compiler like the rest of libspade.a.
SPADE_NVCC_HOST = -Xcompiler -fPIC,-fno-exceptions,-fno-threadsafe-statics,-Wall,-Wextra,-Wno-unused-parameter
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =

# --enable-werror (WARN_CFLAGS has -Werror) makes nvcc's and the host compiler's warnings errors.
core/policy/backend_cuda.$(OBJEXT): $(srcdir)/core/policy/backend_cuda.cu \
		$(srcdir)/core/policy/backend.h $(CONFIG_HEADER)
	@$(MKDIR_P) core/policy
	$(AM_V_NVCC)werr=; case " $(WARN_CFLAGS) " in *" -Werror "*) werr="-Werror all-warnings -Xcompiler -Werror";; esac; \
	$(NVCC) $(NVCCFLAGS) $(SPADE_NVCC_HOST) $$werr -I$(top_builddir) -I$(top_srcdir)/core \
		-c -o $@ $(srcdir)/core/policy/backend_cuda.cu
endif
