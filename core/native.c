/* native.c — dlopen a gcc-compiled environment and host it (core/native.h).
 *
 * What it is: the resolver (dlsym on the object's own handle, so a symbol the
 * environment lacks is not found in some other loaded object) and the
 * open/close pair. What it is not: a loader for untrusted code.
 */
#include "native.h"

#include <dlfcn.h>

#include "errbuf.h"

static void *native_symbol(void *ctx, const char *name) { return dlsym(ctx, name); }

int spade_native_open(const char *so_path, spade_host **out, void **dl_handle, char *err, size_t errlen) {
    if (out) *out = NULL;
    if (dl_handle) *dl_handle = NULL;
    if (!so_path || !out || !dl_handle) {
        spade_errf(err, errlen, "spade_native_open: missing argument");
        return -1;
    }
    void *dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        spade_errf(err, errlen, "%s: %s", so_path, why ? why : "dlopen failed");
        return -1;
    }
    char why[512] = "";
    spade_host *h;
    if (spade_host_new(&h, native_symbol, dl, why, sizeof why) != 0) {
        spade_errf(err, errlen, "%s: %s", so_path, why);
        dlclose(dl);
        return -1;
    }
    *out = h;
    *dl_handle = dl;
    return 0;
}

void spade_native_close(spade_host *h, void *dl_handle) {
    spade_host_free(h);
    if (dl_handle) dlclose(dl_handle);
}
