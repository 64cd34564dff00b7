/* jit_stub.c — the JIT's interface without the JIT, for libspade.so only.
 * Debian's libtcc is a static archive of position-dependent code, which cannot
 * be linked into a shared object; so the shared library leaves the compiler
 * out, and its sandbox's zygote is the installed `spade` program, which has it
 * (core/sandbox/zygote.c, SPADE_SHARED_LIB). Environment code is compiled only
 * in a worker, so in a program that embeds libspade.so these are never reached;
 * if one is, it says why instead of compiling.
 * What it is not: part of libspade.a or of the spade program (core/jit/jit.c). */
#include <stdio.h>

#include "jit/jit.h"

int spade_jit_compile(const char *filename, const char *source, size_t len, spade_jit **out, char *err, size_t errlen,
                      int *line, spade_jit_status *kind) {
    (void)source;
    (void)len;
    if (out) *out = NULL;
    if (line) *line = 0;
    if (kind) *kind = SPADE_JIT_COMPILE_ERROR;
    snprintf(err, errlen, "%s: libspade.so has no compiler: environments compile in the sandbox's workers",
             filename ? filename : "env.c");
    return -1;
}

void *spade_jit_symbol(void *jit, const char *name) {
    (void)jit;
    (void)name;
    return NULL;
}

size_t spade_jit_image_size(const spade_jit *jit) {
    (void)jit;
    return 0;
}

void spade_jit_free(spade_jit *jit) { (void)jit; }
