/* cmd_list.c — `spade list`: every environment on the search path with its
 * family, params and description, each compiled in the sandbox to read them.
 * What it is not: the registry (core/registry.c finds and loads). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_usage_list(FILE *out) {
    fprintf(out,
            "usage: spade list [--paths] [--all] [--no-load]\n"
            "\n"
            "Lists every environment found in the search path: $SPADE_PATH (colon-separated),\n"
            "./plugins, ./stdenv, the installed plugins and stdenv, and the source tree's.\n"
            "For each: name, family, params (default [min..max]) and description. Each file is\n"
            "compiled in the sandbox to read them; one that fails shows its error instead.\n"
            "\n"
            "  -p, --paths     also print each file's path and the directories searched\n"
            "  -a, --all       also list files shadowed by an earlier one with the same name\n"
            "  -n, --no-load   do not compile: names and paths only (fast)\n"
            "  -h, --help      this help\n");
}

static void format_params(const spade_env_info *in, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < in->n_params && o < cap; i++) {
        const spade_param_info *p = &in->params[i];
        char d[32], lo[32], hi[32];
        int k = snprintf(buf + o, cap - o, "%s%s=%s [%s..%s]", i ? ", " : "", p->name, cli_num(p->def, d, sizeof d),
                         cli_num(p->min, lo, sizeof lo), cli_num(p->max, hi, sizeof hi));
        if (k < 0) break;
        o += (size_t)k;
    }
    if (!in->n_params) snprintf(buf, cap, "-");
}

int cli_list(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {{"paths", no_argument, 0, 'p'},
                                             {"all", no_argument, 0, 'a'},
                                             {"no-load", no_argument, 0, 'n'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    int paths = 0, all = 0, load = 1, ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "panh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'p': paths = 1; break;
        case 'a': all = 1; break;
        case 'n': load = 0; break;
        case 'h': cli_usage_list(stdout); return CLI_OK;
        default: return cli_bad_option("list", argc, argv, optopt);
        }
    }
    if (optind != argc) return cli_err(CLI_USAGE, "list", "unexpected argument '%s'", argv[optind]);
    char err[1024];
    spade_registry *r;
    if (spade_registry_new(&r, NULL, 0, err, sizeof err) < 0) return cli_err(CLI_FAIL, "list", "%s", err);
    if (paths) {
        printf("search path:");
        for (int i = 0; i < spade_registry_num_dirs(r); i++) printf(" %s", spade_registry_dir(r, i));
        printf("\n");
    }
    spade_env_listing *L;
    int n;
    if (spade_registry_list(r, load ? sb : NULL, &L, &n, err, sizeof err) < 0) {
        spade_registry_free(r);
        return cli_err(CLI_FAIL, "list", "%s", err);
    }
    int width = 4;
    for (int i = 0; i < n; i++)
        if ((int)strlen(L[i].name) > width) width = (int)strlen(L[i].name);
    if (!n) printf("no environments found (spade list --paths shows where it looked)\n");
    for (int i = 0; i < n; i++) {
        if (L[i].shadowed && !all) continue;
        char params[2048];
        if (L[i].shadowed) {
            printf("%-*s  (shadowed by an earlier file of the same name)\n", width, L[i].name);
        } else if (!load) {
            printf("%-*s\n", width, L[i].name);
        } else if (L[i].ok) {
            format_params(&L[i].info, params, sizeof params);
            printf("%-*s  %-8s  %s\n%-*s  %-8s  params: %s\n", width, L[i].name,
                   *L[i].info.family ? L[i].info.family : "-", L[i].info.description, width, "", "", params);
        } else {
            /* One line per environment: the first line of the failure (a compile
             * error's source excerpt follows it); spade check shows the rest. */
            char *nl = strchr(L[i].error, '\n');
            if (nl) *nl = '\0';
            printf("%-*s  %-8s  does not load: %s%s\n", width, L[i].name, "?", L[i].error,
                   nl ? " (spade check shows the source)" : "");
        }
        if (paths) printf("%-*s  %-8s  %s\n", width, "", "", L[i].path);
    }
    free(L);
    spade_registry_free(r);
    return CLI_OK;
}
