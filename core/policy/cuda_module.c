/* cuda_module.c — finds and loads the CUDA backend, a loadable module
 * (spade-cuda.so, built from backend_cuda.cu with cuBLAS and cudart linked into
 * it), the first time a CUDA backend is opened.
 *
 * Why a module: linked into the program, cuBLAS, cuBLASLt and cudart are mapped
 * and relocated at every start, ~200 MB of RSS for `spade --version` on a
 * machine without a GPU. Loaded on demand, a CPU run pays nothing.
 * What it is not: the backend (backend_cuda.cu, whose vtable is unchanged), nor
 * the choice of backend (backend.c decides when to ask for it).
 * The module is looked for at $SPADE_CUDA_MODULE when set, in the build
 * directory when the running program is the uninstalled build, then in
 * $(pkglibexecdir); the error names every path tried and dlerror's reason.
 */
#include "policy/backend.h"

#ifdef SPADE_POLICY_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "paths.h"
#include "registry.h"

typedef int (*cuda_new_fn)(spade_backend *be, char *err, size_t errlen);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cuda_new_fn cuda_new;
static char why[1024];

static void load(void) {
    const char *paths[3];
    int n = 0;
    const char *env = getenv("SPADE_CUDA_MODULE");
    if (env && *env) paths[n++] = env;
    if (spade_registry_uninstalled()) paths[n++] = SPADE_PATHS_BUILDDIR "/spade-cuda.so";
    paths[n++] = SPADE_PATHS_LIBEXECDIR "/spade-cuda.so";
    size_t at = (size_t)snprintf(why, sizeof why, "cannot load the CUDA module:");
    for (int i = 0; i < n; i++) {
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            cuda_new = (cuda_new_fn)(size_t)dlsym(h, "spade_backend_cuda_new");
            if (cuda_new) return; /* kept loaded: the backend's code and cuBLAS's handles live in it */
            dlclose(h);
        }
        const char *e = dlerror();
        if (at < sizeof why)
            at += (size_t)snprintf(why + at, sizeof why - at, "%s %s (%s)", i ? ";" : "", paths[i],
                                   e ? e : "no spade_backend_cuda_new in it");
    }
}

int spade_backend_cuda_load(spade_backend *be, char *err, size_t errlen) {
    pthread_once(&once, load);
    if (!cuda_new) {
        spade_errf(err, errlen, "%s", why);
        return SPADE_POLICY_ENODEV;
    }
    return cuda_new(be, err, errlen);
}
#else
typedef int spade_cuda_module_unused; /* an empty translation unit is not C11 */
#endif
