/* jit.h — compiles one environment's C source in memory with libtcc.
 *
 * What it is: the compiler step of the sandbox worker (core/sandbox). The
 * source is compiled with `-nostdinc -nostdlib`, SPADE_JIT defined, no include
 * or library path at all; `#include <spade/dsl.h>` / `<spade/env.h>` (or the
 * "..." forms) are replaced by the headers embedded into the binary at build
 * time, followed by a `#line` so tcc's messages carry the user's file and line.
 * Every other #include fails (tcc finds no file; inside the worker its open()
 * gets EACCES). The only symbols the code can call are the allowlist of
 * dsl/runtime.h (spade_dsl_symbols).
 * What it is not: a sandbox. Compiled code runs with the rights of the calling
 * process, and in-process tcc would read a file named by an absolute #include;
 * only core/sandbox makes it safe to compile untrusted source. Not thread-safe
 * beyond what libtcc allows (one compile at a time per process is the rule).
 */
#ifndef SPADE_JIT_H
#define SPADE_JIT_H

#include <stddef.h>

typedef enum spade_jit_status {
    SPADE_JIT_OK = 0,
    SPADE_JIT_COMPILE_ERROR, /* tcc rejected the source (or it holds a NUL byte) */
    SPADE_JIT_LINK_ERROR, /* calls or uses a symbol outside the allowlist */
    SPADE_JIT_OUT_OF_MEMORY, /* tcc or the code image ran out of memory */
} spade_jit_status;

typedef struct spade_jit spade_jit;

/* Compiles and relocates source[0..len) (need not be NUL-terminated; a NUL
 * byte inside is a compile error naming its line and offset). filename appears
 * in messages only. On success *out holds the compiled environment and 0 is
 * returned. On failure -1, *out NULL, err holds "file:line: message" (tcc's
 * words), *line the line in the user's file when known (else 0) and *kind the
 * class. line and kind may be NULL. */
int spade_jit_compile(const char *filename, const char *source, size_t len, spade_jit **out, char *err, size_t errlen,
                      int *line, spade_jit_status *kind);

/* A spade_symbol_fn (core/host.h): the address of an exported symbol of the
 * compiled code, or NULL. ctx is the spade_jit. */
void *spade_jit_symbol(void *jit, const char *name);

/* Bytes of the relocated code and data image. */
size_t spade_jit_image_size(const spade_jit *jit);

void spade_jit_free(spade_jit *jit);

/* The headers embedded at build time (generated jit_headers.c). */
extern const char spade_jit_env_h[];
extern const unsigned long spade_jit_env_h_len;
extern const char spade_jit_dsl_h[];
extern const unsigned long spade_jit_dsl_h_len;

#endif /* SPADE_JIT_H */
