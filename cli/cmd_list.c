/* cmd_list.c — `spade list`: every environment on the search path with its
 * family, params and description, each compiled in the sandbox to read them;
 * `spade list SPEC...`: everything one environment declares (params with
 * their types and ranges, tools with their signatures, limits).
 * What it is not: the registry (core/registry.c finds and loads). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_usage_list(FILE *out) {
    fprintf(out, "usage: spade list [--paths] [--all] [--no-load]\n"
                 "       spade list SPEC...\n"
                 "\n"
                 "With SPECs (NAME or FILE.c): everything each one declares: description, family,\n"
                 "max_steps, success threshold, SOLVE, params (type, default, range) and tools\n"
                 "(signature, description). Exit 1 if one is not found or does not load.\n"
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

/* spade list SPEC: one environment in full. */
static int show_one(spade_sandbox *sb, const char *spec) {
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src = NULL;
    size_t len = 0;
    if (cli_load_spec("list", spec, path, sizeof path, params, sizeof params, &src, &len) != CLI_OK) return CLI_FAIL;
    spade_worker *w = NULL;
    spade_failure f;
    int rc = spade_worker_load(sb, path, src, len, &w, &f);
    free(src);
    if (rc != 0) {
        char *nl = strchr(f.message, '\n');
        if (nl) *nl = '\0';
        return cli_err(CLI_FAIL, "list", "%s: does not load: %s (spade check %s shows more)", path, f.message, path);
    }
    const spade_env_info *in = spade_worker_info(w);
    char a[32], b[32], c[32];
    printf("%s  (%s)\n  %s\n", in->name, path, in->description);
    printf("  family %s, max_steps %d, success >= %s, %s\n", *in->family ? in->family : "-", in->max_steps,
           cli_num(in->success, a, sizeof a), in->has_solve ? "has SOLVE" : "no SOLVE");
    if (!in->n_params) printf("  params: none\n");
    for (int i = 0; i < in->n_params; i++) {
        const spade_param_info *p = &in->params[i];
        printf("  param %s: %s, default %s, [%s..%s]\n", p->name, p->type == SPADE_PARAM_INT ? "int" : "real",
               cli_num(p->def, a, sizeof a), cli_num(p->min, b, sizeof b), cli_num(p->max, c, sizeof c));
    }
    if (!in->n_tools) printf("  tools: none\n");
    for (int i = 0; i < in->n_tools; i++) {
        /* The signature is "RET (ARGS)": shown as the declaration "RET NAME(ARGS)". */
        const spade_tool_info *t = &in->tools[i];
        const char *paren = strchr(t->signature, '(');
        int rl = paren ? (int)(paren - t->signature) : 0;
        while (rl > 0 && t->signature[rl - 1] == ' ') rl--;
        printf("  tool %.*s %s%s\n       %s\n", rl, t->signature, t->name, paren ? paren : t->signature,
               t->description);
    }
    spade_worker_free(w);
    return CLI_OK;
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
    if (optind != argc) {
        int worst = CLI_OK;
        for (int i = optind; i < argc; i++) {
            if (i > optind) printf("\n");
            if (show_one(sb, argv[i]) != CLI_OK) worst = CLI_FAIL;
        }
        return worst;
    }
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
