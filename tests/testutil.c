/* testutil.c — helpers the Check suites share (see testutil.h).
 * Not part of libspade: linked into each test program that uses it. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *tu_srcdir(void)
{
    const char *s = getenv("srcdir");
    return s && *s ? s : SPADE_SRCDIR;
}

char *tu_read_env(const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/envs/%s", tu_srcdir(), name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/tests/envs/%s", SPADE_SRCDIR, name);
        f = fopen(path, "rb");
    }
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

spade_sandbox *tu_sandbox(const spade_sandbox_opts *o)
{
    spade_sandbox *sb = NULL;
    char err[512];
    ck_assert_msg(spade_sandbox_new(&sb, o, err, sizeof err) == 0, "sandbox: %s", err);
    return sb;
}

int tu_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own fd */
}

int tu_children_of(pid_t pid, pid_t *first)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int p = atoi(e->d_name);
        if (p <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", p);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
        int ppid = 0;
        char state;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == pid) {
            if (first && n == 0)
                *first = p;
            n++;
        }
    }
    closedir(d);
    return n;
}

void tu_assert_reaped_at(pid_t pid, const char *file, int line)
{
    int st;
    errno = 0;
    pid_t got = waitpid(pid, &st, WNOHANG);
    int e = errno;
    ck_assert_msg(got == -1 && e == ECHILD, "%s:%d: a child is left: waitpid(%d, WNOHANG) = %d%s%s", file, line,
                  (int)pid, (int)got, got == -1 ? ": " : "", got == -1 ? strerror(e) : "");
}

void tu_mkdtemp(char *dir, size_t cap, const char *tag)
{
    const char *t = getenv("TMPDIR");
    int n = snprintf(dir, cap, "%s/spade-test-%s-XXXXXX", t && *t ? t : "/tmp", tag);
    ck_assert_msg(n > 0 && (size_t)n < cap, "temporary directory name too long for %zu bytes", cap);
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    return remove(path);
}

int tu_rm_rf(const char *dir)
{
    /* Depth first, and without following links: only what is below dir goes. */
    return nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int tu_run(Suite *s)
{
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
