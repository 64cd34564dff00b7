# fuzz/local.mk — the fuzz harnesses of every parser of bytes from outside
# (docs/fuzzing.md): `make fuzz` builds them with clang and libFuzzer and runs
# each, and `make check` replays every corpus and reproducer through the same
# code built by the normal compiler (tests/test_fuzz.sh). The rules that need
# GNU make's pattern rules are in fuzz/fuzz.mk; this file hands it the lists.
#
# A harness is fuzz/fuzz_NAME.c (LLVMFuzzerTestOneInput) with seeds in
# fuzz/corpus/NAME/ and reproducers of fixed findings in fuzz/regress/NAME/.
# Adding one is adding NAME to this list (and, when it needs sources that are
# not in libspade.a, one `export fuzz_extra_NAME = FILES` line below):
FUZZ_HARNESSES = json serve tools tokenizer checkpoint train_config pretrain_config archive gguf sclient

# The CLI's code is not in the library: the harnesses that test it name it.
export fuzz_extra_serve = $(serve_sources)
export fuzz_extra_pretrain_config = cli/util.c cli/transcript_text.c
export fuzz_extra_train_config = cli/util.c cli/train_config.c cli/transcript_text.c $(selfplay_sources) \
	$(designer_sources) $(agent_sources)

# How long `make fuzz` runs each harness (seconds), and at most how many inputs (-1: no bound);
# FUZZ=NAME runs only that harness, FUZZ_PARALLEL=yes runs them all at once, FUZZ_ARGS goes to
# every libFuzzer command line (fuzz/run.sh).
FUZZ_SECONDS = 60
FUZZ_RUNS = -1
FUZZ =
FUZZ_PARALLEL = no
FUZZ_ARGS =

# What fuzz/fuzz.mk reads (from the environment of its make).
export FUZZ_LIB_SRCS = $(libspade_a_SOURCES) $(nodist_libspade_a_SOURCES)
export FUZZ_LIB_ADD = $(libspade_a_LIBADD)
export FUZZ_CPPFLAGS = $(DEFS) -include $(top_builddir)/config.h -I$(top_srcdir) -iquote $(top_srcdir)/core \
	-I$(top_srcdir)/dsl -I$(top_srcdir)/include -iquote $(top_builddir)/core -iquote $(top_srcdir)/cli \
	-DSPADE_SRCDIR='"$(abs_top_srcdir)"' $(FFI_CFLAGS) $(INIH_CFLAGS) $(SECCOMP_CFLAGS) $(SQLITE_CFLAGS) \
	$(OPENBLAS_CFLAGS) $(LAPACKE_CFLAGS) $(CUDA_CFLAGS)
export FUZZ_LIBS = $(TCC_LIBS) $(FFI_LIBS) $(INIH_LIBS) $(SECCOMP_LIBS) $(SQLITE_LIBS) $(OPENBLAS_LIBS) \
	$(LAPACKE_LIBS) $(CUDA_LIBS) -lm
export REPLAY_CFLAGS = $(AM_CFLAGS) $(CFLAGS)
export REPLAY_LDFLAGS = $(AM_LDFLAGS) $(LDFLAGS)
export REPLAY_LIBS = $(SPADE_LIBS)
FUZZ_MAKE = $(MAKE) -f $(srcdir)/fuzz/fuzz.mk srcdir=$(srcdir) HARNESSES="$(FUZZ_HARNESSES)" ONLY="$(FUZZ)" \
	FUZZ_CC="$(FUZZ_CC)" CC="$(CC)" AR="$(AR)" \
	RANLIB="$(RANLIB)" FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_ARGS="$(FUZZ_ARGS)" \
	FUZZ_PARALLEL=$(FUZZ_PARALLEL)

fuzz: libspade.a core/paths.h
	@if test -z "$(FUZZ_CC)"; then \
	  echo "make fuzz: no clang with libFuzzer was found by ./configure."; \
	  echo "  On Debian: apt-get install clang libclang-rt-dev (or libclang-rt-14-dev), then ./configure again."; \
	  exit 1; fi
	+@$(FUZZ_MAKE) run

# The replay drivers, built before the tests run (check_DATA), by the normal compiler.
fuzz-replays: libspade.a core/paths.h
	+@$(FUZZ_MAKE) ONLY= replays
check_DATA = fuzz-replays
.PHONY: fuzz fuzz-replays

TESTS += tests/test_fuzz.sh
AM_TESTS_ENVIRONMENT = FUZZ_HARNESSES='$(FUZZ_HARNESSES)'; export FUZZ_HARNESSES;
clean-local: clean-fuzz
clean-fuzz:
	rm -rf fuzz/build
.PHONY: clean-fuzz
# The whole folder (harnesses, corpora, reproducers) goes into the tarball, its build output does not.
EXTRA_DIST += tests/test_fuzz.sh fuzz
dist-hook: dist-fuzz-clean
dist-fuzz-clean:
	rm -rf $(distdir)/fuzz/build
.PHONY: dist-fuzz-clean
