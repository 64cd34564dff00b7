/* backend.c — choosing a policy backend at run time (auto|cpu|cuda|cpu_ref).
 *
 * What it is: spade_backend_open/close, the only place that knows which
 * backends exist in this build and how "auto" decides.
 * What it is not: any arithmetic (backend_cpu.c, backend_cuda.cu).
 */
#include "policy/backend.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "errbuf.h"

static void cpu_note(char *note, size_t notelen, const char *prefix) {
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    char blas[160];
    spade_backend_cpu_blas_note(blas, sizeof blas);
    if (note && notelen)
        snprintf(note, notelen, "%scpu (%s, %d OpenMP thread%s)", prefix, blas, threads, threads == 1 ? "" : "s");
}

int spade_backend_open(const char *which, spade_backend *be, char *note, size_t notelen, char *err, size_t errlen) {
    if (note && notelen) note[0] = 0;
    memset(be, 0, sizeof *be);
    if (!which || !*which) which = "auto";
    if (!strcmp(which, "cpu_ref")) {
        if (note && notelen) snprintf(note, notelen, "cpu_ref (plain C, one thread)");
        return spade_backend_cpu_ref_new(be, err, errlen);
    }
    if (!strcmp(which, "cpu")) {
        cpu_note(note, notelen, "");
        return spade_backend_cpu_new(be, err, errlen);
    }
    if (!strcmp(which, "cpu_tt")) {
        cpu_note(note, notelen, "cpu_tt, T x T attention for benchmarks: ");
        return spade_backend_cpu_tt_new(be, err, errlen);
    }
    if (!strcmp(which, "cuda") || !strcmp(which, "auto")) {
        int want_cuda = !strcmp(which, "cuda");
#ifdef SPADE_POLICY_CUDA
        char cerr[1024] = "";
        /* auto asks for the GPU only where the NVIDIA driver is: loading the module maps cuBLAS (~200 MB) */
        int driver = access("/dev/nvidiactl", F_OK) == 0 || access("/proc/driver/nvidia/version", F_OK) == 0;
        int rc = want_cuda || driver ? spade_backend_cuda_load(be, cerr, sizeof cerr) : SPADE_POLICY_ENODEV;
        if (!want_cuda && !driver) snprintf(cerr, sizeof cerr, "no NVIDIA driver (/dev/nvidiactl)");
        if (rc == 0) {
            if (note && notelen) snprintf(note, notelen, "cuda (cuBLAS)");
            return 0;
        }
        if (want_cuda) {
            spade_errf(err, errlen, "policy.backend = cuda: %s", cerr);
            return rc;
        }
        char prefix[1100];
        snprintf(prefix, sizeof prefix, "auto: no usable GPU (%s); using ", cerr);
        cpu_note(note, notelen, prefix);
#else
        if (want_cuda) {
            spade_errf(err, errlen,
                       "policy.backend = cuda, but this build has no CUDA backend "
                       "(configure did not find nvcc/cuBLAS); use auto or cpu");
            return SPADE_POLICY_ENODEV;
        }
        cpu_note(note, notelen, "auto: built without CUDA; using ");
#endif
        return spade_backend_cpu_new(be, err, errlen);
    }
    spade_errf(err, errlen, "unknown backend '%s' (expected auto, cpu, cuda or cpu_ref)", which);
    return SPADE_POLICY_EINVAL;
}

void spade_backend_close(spade_backend *be) {
    if (be && be->vt && be->vt->free) be->vt->free(be->ctx);
    if (be) memset(be, 0, sizeof *be);
}
