/* fuzz_util.h — what several fuzz harnesses share: putting the fuzzer's bytes
 * into a file for a parser that only takes a path, and the FNV-1a 64 the
 * tokenizer and checkpoint files end with (so a harness can repair the
 * checksum and let the fuzzer reach the code behind it).
 * What it is not: part of libspade, or of the replay driver (fuzz/replay.c).
 */
#ifndef SPADE_FUZZ_UTIL_H
#define SPADE_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_path[512], fuzz_file_path[1024];

/* Removes the file and the directory at exit (a crash leaves them, with the input that crashed). */
static inline void fuzz_dir_remove(void) {
    if (fuzz_file_path[0]) unlink(fuzz_file_path);
    if (fuzz_dir_path[0]) rmdir(fuzz_dir_path);
}

/* A private directory made once per process (under TMPDIR, else /tmp): the
 * harness's file lives there, and a relative path inside fuzzed input resolves
 * into it, not into the working directory. */
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/spade-fuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_path)) abort();
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

/* Writes data to fuzz_dir()/name (replacing it; one name per harness) and
 * returns the path in a static buffer; aborts when the file cannot be written
 * (not a finding). */
static inline const char *fuzz_file(const char *name, const void *data, size_t n) {
    char *path = fuzz_file_path;
    snprintf(path, sizeof fuzz_file_path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    if (fclose(f)) abort();
    return path;
}

static inline uint64_t fuzz_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001B3ull;
    }
    return h;
}
#define FUZZ_FNV_INIT 0xCBF29CE484222325ull

#endif
