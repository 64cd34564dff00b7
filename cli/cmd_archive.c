/* cmd_archive.c — `spade archive list|show|export`: what a run's archive
 * (RUN/spade.db) holds: every environment the designer built, its gate
 * outcome, pass rates and regret; one environment's source and plays; and
 * exporting a good one into plugins/ so a person keeps it.
 * What it is not: the archive (core/archive.h) nor the loop that fills it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "cli.h"

void cli_usage_archive(FILE *out) {
    fprintf(out, "usage: spade archive list RUN [--valid] [--family F] [--limit N]\n"
                 "       spade archive show RUN ID\n"
                 "       spade archive export RUN ID [--to DIR]\n"
                 "\n"
                 "Reads a run's archive: RUN is a run directory (its spade.db) or the .db file.\n"
                 "  list    one line per environment, newest first: id, iteration, family, gate\n"
                 "          (valid, or the first gate it failed), pass rates without and with the\n"
                 "          hint, regret, reward\n"
                 "  show    one environment: its fields, why a gate refused it, its hint, its source\n"
                 "  export  writes its source to DIR/NAME.c (default DIR: plugins), NAME from its ENV()\n"
                 "          name; an existing file is never overwritten\n"
                 "\n"
                 "  -v, --valid      only environments that passed every gate\n"
                 "  -f, --family F   only family F\n"
                 "  -n, --limit N    at most N lines (default all)\n"
                 "  -t, --to DIR     where export writes (default plugins)\n"
                 "  -h, --help       this help\n"
                 "The archive is a plain SQLite file: sqlite3 RUN/spade.db '.schema' shows its tables.\n");
}

static int open_run(const char *run, spade_archive **a) {
    char path[SPADE_PATH_MAX], err[1024];
    struct stat st;
    if (stat(run, &st) < 0) return cli_err(CLI_FAIL, "archive", "%s: %s", run, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        if (snprintf(path, sizeof path, "%s/spade.db", run) >= (int)sizeof path)
            return cli_err(CLI_FAIL, "archive", "%s: path too long", run);
        if (stat(path, &st) < 0)
            return cli_err(CLI_FAIL, "archive", "%s: no archive (spade.db) in this directory", run);
    } else
        snprintf(path, sizeof path, "%s", run);
    if (spade_archive_open(a, path, err, sizeof err) < 0) return cli_err(CLI_FAIL, "archive", "%s", err);
    return 0;
}

static const char *num(double v, char *buf, size_t cap) {
    if (isfinite(v))
        snprintf(buf, cap, "%.3f", v);
    else
        snprintf(buf, cap, "-");
    return buf;
}

static int print_line(void *ctx, const spade_archive_env *e) {
    (void)ctx;
    char a[16], b[16], c[16], d[16];
    printf("%6ld  %4d  %-12s %-22s %6s %6s %7s %7s\n", e->id, e->iteration, e->family, e->gate[0] ? e->gate : "valid",
           num(e->pass_nohint, a, sizeof a), num(e->pass_hint, b, sizeof b), num(e->regret, c, sizeof c),
           num(e->reward, d, sizeof d));
    return 0;
}

/* The ENV("name", ...) of a source, or "" when it has none that is a valid name. */
static void env_name(const char *src, char *out, size_t cap) {
    const char *p = strstr(src, "ENV(\"");
    out[0] = 0;
    if (!p) return;
    p += 5;
    size_t n = strcspn(p, "\"");
    if (n == 0 || n >= cap) return;
    memcpy(out, p, n);
    out[n] = 0;
    if (!spade_name_valid(out)) out[0] = 0;
}

int cli_archive(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    static const struct option longopts[] = {
        {"valid", no_argument, 0, 'v'},    {"family", required_argument, 0, 'f'}, {"limit", required_argument, 0, 'n'},
        {"to", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int valid = 0, ch;
    long limit = 0;
    const char *family = NULL, *to = "plugins";
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "vf:n:t:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'v': valid = 1; break;
        case 'f': family = optarg; break;
        case 'n':
            if (cli_parse_long("archive", "--limit", optarg, 1, 1000000000, &limit) < 0) return CLI_USAGE;
            break;
        case 't': to = optarg; break;
        case 'h': cli_usage_archive(stdout); return CLI_OK;
        default: return cli_bad_option("archive", argc, argv, optopt);
        }
    }
    int nargs = argc - optind;
    const char *verb = nargs > 0 ? argv[optind] : NULL;
    if (!verb) return cli_err(CLI_USAGE, "archive", "say list, show or export (spade archive --help)");
    int want = !strcmp(verb, "list") ? 2 : !strcmp(verb, "show") || !strcmp(verb, "export") ? 3 : 0;
    if (!want) return cli_err(CLI_USAGE, "archive", "unknown action '%s' (list, show or export)", verb);
    if (nargs != want)
        return cli_err(CLI_USAGE, "archive", "usage: spade archive %s RUN%s", verb, want == 3 ? " ID" : "");
    long id = 0;
    if (want == 3 && cli_parse_long("archive", "ID", argv[optind + 2], 1, 1L << 62, &id) < 0) return CLI_USAGE;
    spade_archive *a;
    int rc = open_run(argv[optind + 1], &a);
    if (rc) return rc;
    char err[1024];
    rc = CLI_FAIL;
    if (want == 2) {
        printf("%6s  %4s  %-12s %-22s %6s %6s %7s %7s\n", "id", "iter", "family", "gate", "pass", "+hint", "regret",
               "reward");
        if (spade_archive_each_env(a, valid, family, (int)limit, print_line, NULL, err, sizeof err) < 0)
            cli_err(CLI_FAIL, "archive", "%s", err);
        else
            rc = CLI_OK;
        spade_archive_close(a);
        return rc;
    }
    spade_archive_env e;
    int got = spade_archive_get_env(a, id, &e, err, sizeof err);
    spade_archive_close(a);
    if (got) return cli_err(CLI_FAIL, "archive", "%s", err);
    if (!strcmp(verb, "show")) {
        char p0[16], p1[16], r[16], w[16];
        printf("id %ld  iteration %d  family %s  corpus item %s\n", e.id, e.iteration, e.family,
               e.corpus_item[0] ? e.corpus_item : "-");
        if (e.writer[0]) printf("written by %s\n", e.writer); /* a served designer (designer.source = remote) */
        printf("gate: %s%s%s\n", e.gate[0] ? e.gate : "valid (passed every gate)", e.reason[0] ? ": " : "", e.reason);
        printf("pass %s  with hint %s  regret %s  reward %s  (%d plays per arm)\n", num(e.pass_nohint, p0, sizeof p0),
               num(e.pass_hint, p1, sizeof p1), num(e.regret, r, sizeof r), num(e.reward, w, sizeof w), e.plays);
        printf("hint: %s\n---\n%s%s", e.hint[0] ? e.hint : "-", e.source,
               e.source_len && e.source[e.source_len - 1] != '\n' ? "\n" : "");
        rc = CLI_OK;
    } else {
        char name[64], path[SPADE_PATH_MAX];
        env_name(e.source, name, sizeof name);
        if (!name[0]) snprintf(name, sizeof name, "archived_%ld", e.id);
        if (snprintf(path, sizeof path, "%s/%s.c", to, name) >= (int)sizeof path) {
            cli_err(CLI_FAIL, "archive", "%s: path too long", to);
        } else {
            int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0)
                cli_err(CLI_FAIL, "archive", "%s: %s%s", path, strerror(errno),
                        errno == EEXIST ? " (not overwritten: pass --to DIR or move it)" : "");
            else {
                ssize_t wr = write(fd, e.source, e.source_len);
                if (close(fd) < 0 || wr != (ssize_t)e.source_len)
                    cli_err(CLI_FAIL, "archive", "%s: write failed", path);
                else {
                    printf("wrote %s (environment %ld, %s); check it with: spade check %s\n", path, e.id,
                           e.gate[0] ? "it FAILED a gate" : "valid", path);
                    rc = CLI_OK;
                }
            }
        }
    }
    spade_archive_env_clear(&e);
    return rc;
}
