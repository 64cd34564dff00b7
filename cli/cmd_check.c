/* cmd_check.c — `spade check SPEC...`: runs the environment checker
 * (core/check.h) and prints its report. Not the checker itself. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"

void cli_usage_check(FILE *out) {
    fprintf(out, "usage: spade check SPEC... [--seeds N] [--solve-seeds N] [--first-seed S] [--timeout S] [--verbose]\n"
                 "       spade check --gates FILE... [--require-solve] [--timeout S]\n"
                 "\n"
                 "Runs every check on each environment (SPEC = NAME or FILE.c, optionally :key=value,...):\n"
                 "compile, params, reset, reset_deterministic, step_deterministic, seeds_vary,\n"
                 "arbitrary_actions, max_steps, hint, solve, random_agent, param_extremes, obs_size.\n"
                 "Prints one line per check: PASS, FAIL (with the reason), WARN or SKIP. The first call\n"
                 "that times out stops the checks of that environment (the rest are SKIPped).\n"
                 "On a terminal, the check in progress is shown on stderr.\n"
                 "\n"
                 "  --seeds N        seeds for the reset/step/hint checks (default 5)\n"
                 "  --solve-seeds N  episodes the SOLVE and random agents play (default 20)\n"
                 "  --first-seed S   first seed used (default 0)\n"
                 "  --timeout S      deadline of one call into the environment, in seconds (default 1)\n"
                 "  -v, --verbose    also print the first observation, the hint and a solve action\n"
                 "  -g, --gates      instead, run exactly the gates self-play puts a generated environment\n"
                 "                   through (compile, limits, reset_deterministic, replay_deterministic,\n"
                 "                   probe_actions, random_agent, noop_agent, constant_agent, obs_echo,\n"
                 "                   hint_echo, solve, winnable, novelty), one line each as it is known;\n"
                 "                   exit 0 only when every gate passes (docs/selfplay.md); a timeout\n"
                 "                   stops them (--timeout S sets the deadline)\n"
                 "      --require-solve  with --gates: a missing SOLVE fails the solve gate\n"
                 "  -h, --help       this help\n"
                 "\n"
                 "Exit status: 0 every check passed (warnings allowed), 1 a check failed, 2 usage.\n");
}

static const char *progress_name;

static void show_progress(const char *check, void *arg) {
    (void)arg;
    fprintf(stderr, "\r\033[Kchecking %s: %s...", progress_name ? progress_name : "", check);
    fflush(stderr);
}

int cli_check(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {
        {"seeds", required_argument, 0, 's'},
        {"solve-seeds", required_argument, 0, 'S'},
        {"first-seed", required_argument, 0, 'f'},
        {"verbose", no_argument, 0, 'v'},
        {"help", no_argument, 0, 'h'},
        {"timeout", required_argument, 0, 't'},
        {"gates", no_argument, 0, 'g'},
        {"require-solve", no_argument, 0, 'R'},
        {0, 0, 0, 0},
    };
    double timeout = 0;
    int gates = 0, require_solve = 0;
    spade_check_opts o;
    spade_check_opts_default(&o);
    long v;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "vhg", longopts, NULL)) != -1) {
        switch (ch) {
        case 'g': gates = 1; break;
        case 'R': require_solve = 1; break;
        case 's':
            if (cli_parse_long("check", "--seeds", optarg, 1, 10000, &v) < 0) return CLI_USAGE;
            o.seeds = (int)v;
            break;
        case 'S':
            if (cli_parse_long("check", "--solve-seeds", optarg, 0, 1000000, &v) < 0) return CLI_USAGE;
            o.solve_seeds = (int)v;
            break;
        case 'f':
            if (cli_parse_u64("check", "--first-seed", optarg, &o.first_seed) < 0) return CLI_USAGE;
            break;
        case 't': {
            char *end = NULL;
            timeout = strtod(optarg, &end);
            if (!end || end == optarg || *end || !isfinite(timeout) || timeout <= 0 || timeout > 3600) {
                cli_err(CLI_USAGE, "check", "--timeout: '%s' is not a number of seconds in (0, 3600]", optarg);
                return CLI_USAGE;
            }
            break;
        }
        case 'v': o.verbose = 1; break;
        case 'h': cli_usage_check(stdout); return CLI_OK;
        default: return cli_bad_option("check", argc, argv, optopt);
        }
    }
    if (optind >= argc) {
        cli_err(CLI_USAGE, "check", "which environment? (spade check NAME_OR_FILE[:params])");
        return CLI_USAGE;
    }
    o.timeout_option = "--timeout S";
    spade_sandbox *own = NULL;
    if (timeout > 0) {
        /* The deadline is the sandbox's: a sandbox of our own carries it (the gates' too). */
        char err[512];
        spade_sandbox_opts so = {.call_timeout_s = timeout};
        if (spade_sandbox_new(&own, &so, err, sizeof err) != 0)
            return cli_err(CLI_FAIL, "check", "cannot start the sandbox: %s", err);
        sb = own;
    }
    if (gates) {
        int worst = CLI_OK;
        for (int i = optind; i < argc; i++) {
            int rc = cli_check_gates(sb, argv[i], require_solve);
            if (rc > worst) worst = rc;
        }
        spade_sandbox_free(own);
        return worst;
    }
    int tty = isatty(2);
    if (tty) {
        o.progress = show_progress;
        o.progress_arg = NULL;
    }
    int worst = CLI_OK;
    int many = argc - optind > 1;
    spade_check_report *rep = malloc(sizeof *rep);
    if (!rep) return cli_err(CLI_FAIL, "check", "out of memory");
    for (int i = optind; i < argc; i++) {
        char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
        char *src = NULL;
        size_t len = 0;
        if (cli_load_spec("check", argv[i], path, sizeof path, params, sizeof params, &src, &len) != CLI_OK) {
            worst = CLI_FAIL;
            continue;
        }
        if (many) printf("== %s%s%s\n", path, *params ? ":" : "", params);
        fflush(stdout);
        progress_name = path;
        int rc = spade_check(sb, path, src, len, params, &o, rep);
        if (tty) fputs("\r\033[K", stderr);
        free(src);
        fputs(rep->text, stdout);
        printf("%s: %d passed, %d failed, %d warnings%s\n", path, rep->passed, rep->failed, rep->warned,
               rc < 0 ? " (the sandbox failed)" : "");
        fflush(stdout);
        if (rc != 0) worst = CLI_FAIL;
    }
    free(rep);
    spade_sandbox_free(own);
    return worst;
}
