# fuzz.mk — the GNU make rules behind `make fuzz` and the replay drivers of
# `make check`, called by fuzz/local.mk as $(MAKE) -f fuzz/fuzz.mk with the
# harness list, their extra sources and the build's flags on its command line
# (exported by fuzz/local.mk). Kept out of automake's sight because it needs pattern
# rules and $(eval); not meant to be run by hand.
#
# Fuzzers: every source of libspade and each harness's extras, compiled again
# by clang with -fsanitize=fuzzer-no-link,address,undefined into
# fuzz/build/fz/, linked with -fsanitize=fuzzer into fuzz/build/fuzz_NAME.
# Replays: the harness and fuzz/replay.c compiled by the normal compiler into
# fuzz/build/rp/, linked with the built libspade.a into fuzz/build/replay_NAME.
# Its inputs come from the environment: fuzz/local.mk exports them.

B := fuzz/build
# FUZZ=NAME... (ONLY here) picks harnesses; the library's sources less its headers.
ifneq ($(strip $(ONLY)),)
override HARNESSES := $(ONLY)
endif
LIB_SRCS := $(filter %.c,$(FUZZ_LIB_SRCS))
LIB_ADD := $(FUZZ_LIB_ADD)
vpath %.c $(srcdir)
fz_objs = $(patsubst %.c,$(B)/fz/%.o,$(1))
rp_objs = $(patsubst %.c,$(B)/rp/%.o,$(1))
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_FLAGS = -g -O1 -std=c11 -w $(FUZZ_SAN) -fsanitize=fuzzer-no-link

$(B)/fz/%.o: %.c
	@mkdir -p $(@D)
	@echo "  FUZZCC   $@"; $(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_CPPFLAGS) -I$(srcdir)/fuzz -MMD -MP -c -o $@ $<
$(B)/rp/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC       $@"; $(CC) $(REPLAY_CFLAGS) $(FUZZ_CPPFLAGS) -I$(srcdir)/fuzz -MMD -MP -c -o $@ $<

$(B)/libspade-fuzz.a: $(call fz_objs,$(LIB_SRCS))
	@echo "  AR       $@"; rm -f $@ && $(AR) cr $@ $^ && $(RANLIB) $@

define harness
$(B)/fuzz_$(1): $(call fz_objs,fuzz/fuzz_$(1).c $(fuzz_extra_$(1))) $(B)/libspade-fuzz.a
	@echo "  FUZZLD   $$@"; $(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $$@ $$^ $(LIB_ADD) $(FUZZ_LIBS)
$(B)/replay_$(1): $(call rp_objs,fuzz/fuzz_$(1).c fuzz/replay.c $(fuzz_extra_$(1))) libspade.a
	@echo "  CCLD     $$@"; $(CC) $(REPLAY_LDFLAGS) -o $$@ $$(filter-out libspade.a,$$^) $(REPLAY_LIBS)
endef
$(foreach h,$(HARNESSES),$(eval $(call harness,$(h))))

fuzzers: $(foreach h,$(HARNESSES),$(B)/fuzz_$(h))
replays: $(foreach h,$(HARNESSES),$(B)/replay_$(h))

# The runs themselves: fuzz/run.sh (FUZZ_SECONDS, FUZZ_RUNS, FUZZ_PARALLEL, FUZZ_ARGS from the environment).
run: fuzzers
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_ARGS="$(FUZZ_ARGS)" FUZZ_PARALLEL=$(FUZZ_PARALLEL) \
	  $(SHELL) $(srcdir)/fuzz/run.sh $(srcdir) $(HARNESSES)

.PHONY: fuzzers replays run
-include $(shell find $(B)/fz $(B)/rp -name '*.d' 2>/dev/null)
