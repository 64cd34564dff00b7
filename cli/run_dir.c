/* run_dir.c — the run directory of `spade train` (run_dir.h): atomic writes,
 * the state file, and tidying what a kill left behind.
 * What it is not: the config (train_config.c) or the run (cmd_train.c).
 */
#include "run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry.h"

int cli_write_atomic(const char *path, const char *text, size_t n) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ssize_t w = write(fd, text, n);
    if (w != (ssize_t)n || fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *s = strrchr(dir, '/');
    if (s) *s = 0;
    int dfd = open(s ? dir : ".", O_RDONLY);
    if (dfd >= 0) fsync(dfd), close(dfd);
    return 0;
}

int cli_copy_file(const char *from, const char *to) {
    char *buf = NULL, e[256];
    size_t n;
    if (spade_read_source(from, &buf, &n, e, sizeof e) < 0) return -1;
    int rc = cli_write_atomic(to, buf, n);
    free(buf);
    return rc;
}

/* The iteration the state file says is done (-1 when there is none) and its checkpoint. */
int cli_run_read_state(const char *dir, char *ckpt, size_t cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/state", dir);
    FILE *f = fopen(path, "r");
    int it = -1;
    char name[256] = "";
    if (!f) return -1;
    if (fscanf(f, "iteration %d checkpoint %255s", &it, name) != 2) it = -2;
    fclose(f);
    snprintf(ckpt, cap, "%s/%s", dir, name);
    return it;
}

/* Removes what a killed run can leave behind: checkpoints other than the
 * state's (a kill between writing the state and unlinking the old one) and
 * temporary files of an interrupted atomic write. */
void cli_run_tidy(const char *dir, const char *keep) {
    DIR *d = opendir(dir);
    const char *base = strrchr(keep, '/');
    base = base ? base + 1 : keep;
    if (!d) return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        const char *n = de->d_name;
        int old_ckpt = !strncmp(n, "policy-", 7) && strstr(n, ".ckpt") && strcmp(n, base);
        if (old_ckpt || strstr(n, ".tmp.")) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, n);
            unlink(p);
        }
    }
    closedir(d);
}

/* Keeps the log lines of iterations <= last (a line past the checkpoint is played again). */
int cli_run_trim_log(const char *log, int last) {
    FILE *f = fopen(log, "r");
    if (!f) return 0;
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap), line[65536];
    while (out && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"iteration\":");
        size_t k = strlen(line);
        if (!p || atoi(p + 12) > last || line[k - 1] != '\n') continue; /* a kill mid-write leaves a line cut short */
        if (n + k + 1 > cap) {
            char *no = realloc(out, cap = 2 * (n + k + 1));
            if (!no) break;
            out = no;
        }
        memcpy(out + n, line, k);
        n += k;
    }
    fclose(f);
    int rc = out ? cli_write_atomic(log, out, n) : -1;
    free(out);
    return rc;
}

/* Takes back what a new run wrote before it failed to start (a missing [policy] init), so the
 * directory does not look like a run that would resume. */
void cli_run_unmake(const char *dir) {
    char p[4400];
    snprintf(p, sizeof p, "%s/config.ini", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/config.base", dir);
    unlink(p);
    rmdir(dir); /* only if nothing else is there */
}
