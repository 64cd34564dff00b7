/* native.h — a host (core/host.h) over an environment compiled natively by gcc
 * into a shared object and loaded with dlopen.
 *
 * What it is: the path tests and the in-process benchmark reference take. The
 * .so leaves the DSL helpers (spade_say, ...) undefined and resolves them from
 * the executable, so a program that uses this links with -Wl,--export-dynamic.
 * Build an environment with
 *   cc -std=c11 -O2 -shared -fPIC -I<srcdir>/dsl -o env.so env.c
 * What it is not: a sandbox (the code runs in this process, trusted) nor a way
 * to run untrusted source (that is core/sandbox + core/jit).
 */
#ifndef SPADE_NATIVE_H
#define SPADE_NATIVE_H

#include <stddef.h>

#include "host.h"

/* dlopens so_path (RTLD_NOW | RTLD_LOCAL) and builds a validated host on it.
 * On success *out and *dl_handle are set and 0 is returned; on failure both are
 * NULL, nothing stays loaded, and err names the file and the problem. */
int spade_native_open(const char *so_path, spade_host **out, void **dl_handle, char *err, size_t errlen);
/* Frees the host, then unloads the object (either may be NULL). */
void spade_native_close(spade_host *h, void *dl_handle);

#endif /* SPADE_NATIVE_H */
