/* cmd_run.c — `spade run SPEC --episodes N --agent random|solve|stdin`: plays
 * episodes in one sandbox worker, many instances stepped per round trip, and
 * reports each episode's return and a summary (optionally as JSONL).
 *
 * Episode i always uses seed S + i and (random agent) an action stream seeded
 * from S and i, so results do not depend on how episodes are batched.
 * What it is not: a trainer or an evaluator of policies (agent/ and core/selfplay).
 */
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"

void cli_usage_run(FILE *out) {
    fprintf(out,
            "usage: spade run SPEC [--episodes N] [--agent random|solve|stdin] [--seed S]\n"
            "                 [--batch B] [--quiet] [--show] [--jsonl FILE]\n"
            "\n"
            "Plays N episodes of the environment SPEC (NAME or FILE.c, optionally :key=value,...)\n"
            "and prints each episode's return, steps and success, then a summary: mean return,\n"
            "success rate, mean steps and steps per second. Episode i uses seed S+i.\n"
            "\n"
            "  -n, --episodes N   episodes to play (default 10)\n"
            "  -a, --agent A      random: short random numbers, words and directions (seeded from S);\n"
            "                     solve: the environment's SOLVE reference actions;\n"
            "                     stdin: one action per line read from standard input\n"
            "                     (default random)\n"
            "  -s, --seed S       first seed (default 0)\n"
            "  -b, --batch B      episodes stepped together in one round trip (default 32; 1 for stdin)\n"
            "  -q, --quiet        print only the summary\n"
            "      --show         print every observation and action\n"
            "      --jsonl FILE   write one JSON object per episode and a final summary object\n"
            "                     (FILE '-' is standard output)\n"
            "  -h, --help         this help\n"
            "\n"
            "Shows progress on a terminal. Exit status: 0 done, 1 the environment failed (crash,\n"
            "timeout, ...) or stdin ended early, 2 usage.\n");
}

enum { AGENT_RANDOM, AGENT_SOLVE, AGENT_STDIN };

/* Ctrl-C or SIGTERM stops the run between two round trips instead of killing
 * it: the episodes already finished stay in the JSONL (a killed process would
 * lose stdio's buffer and leave a cut line), and the summary is printed. */
static volatile sig_atomic_t run_stop_signal;
static void on_stop_signal(int sig) { run_stop_signal = sig; }

typedef struct slot {
    int ep; /* episode number, -1 when idle */
    uint64_t seed, rng;
    int steps;
    char *act; /* this step's action */
    size_t act_len, act_cap;
} slot;

typedef struct stats {
    long episodes, wins, steps;
    double ret_sum;
    long total_steps; /* including episodes not finished */
} stats;

static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.17g", v);
    else fputs("null", f);
}

static void progress(const stats *st, long n, double t0, int final) {
    double dt = cli_now() - t0;
    fprintf(stderr, "\r\033[K[run] %ld/%ld episodes  mean return %.3f  success %.1f%%  %.0f steps/s", st->episodes, n,
            st->episodes ? st->ret_sum / st->episodes : 0.0, st->episodes ? 100.0 * st->wins / st->episodes : 0.0,
            dt > 0 ? st->total_steps / dt : 0.0);
    if (final) fputs("\r\033[K", stderr);
    fflush(stderr);
}

static int ensure_cap(slot *s, size_t need) {
    if (s->act_cap >= need) return 0;
    char *p = realloc(s->act, need);
    if (!p) return -1;
    s->act = p;
    s->act_cap = need;
    return 0;
}

static void show_text(const char *prefix, int ep, const char *text, size_t len) {
    printf("[episode %d] %s", ep, prefix);
    fwrite(text, 1, len, stdout);
    if (!len || text[len - 1] != '\n') putchar('\n');
}

typedef struct episodes_ctx {
    spade_worker *w;
    int first; /* instance id of slot 0 */
    uint64_t seed;
    slot *slots;
    const int *idx;
    spade_step_result *res;
    long *next_ep;
    int show;
    const char *path;
} episodes_ctx;

/* Starts the next episodes in the slots idx[0..k), in one reset round trip. */
static int start_episodes(episodes_ctx *E, int k, spade_failure *f) {
    if (k <= 0) return 0;
    uint64_t *seeds = malloc(sizeof *seeds * (size_t)k);
    int *ids = malloc(sizeof *ids * (size_t)k);
    if (!seeds || !ids) {
        free(seeds), free(ids);
        cli_err(CLI_FAIL, "run", "out of memory");
        return -1;
    }
    for (int j = 0; j < k; j++) {
        slot *s = &E->slots[E->idx[j]];
        s->ep = (int)(*E->next_ep)++;
        s->seed = E->seed + (uint64_t)s->ep;
        s->rng = E->seed ^ ((uint64_t)s->ep * 0x9E3779B97F4A7C15ULL) ^ 0xA5A5A5A5ULL;
        s->steps = 0;
        seeds[j] = s->seed;
        ids[j] = E->first + E->idx[j];
    }
    int rc = spade_worker_reset(E->w, k, ids, seeds, E->res, f);
    if (rc != 0) {
        char what[SPADE_PATH_MAX + 64];
        snprintf(what, sizeof what, "%s: reset (episode %d, seed %llu)", E->path, E->slots[E->idx[0]].ep,
                 (unsigned long long)E->slots[E->idx[0]].seed);
        cli_print_failure("run", what, f);
    } else if (E->show) {
        for (int j = 0; j < k; j++) show_text("", E->slots[E->idx[j]].ep, E->res[j].obs, E->res[j].obs_len);
    }
    free(seeds), free(ids);
    return rc ? -1 : 0;
}

int cli_run(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {
        {"episodes", required_argument, 0, 'n'}, {"agent", required_argument, 0, 'a'},
        {"seed", required_argument, 0, 's'},     {"batch", required_argument, 0, 'b'},
        {"quiet", no_argument, 0, 'q'},          {"show", no_argument, 0, 'w'},
        {"jsonl", required_argument, 0, 'j'},    {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    long n_episodes = 10, batch = 32, v;
    int agent = AGENT_RANDOM, quiet = 0, show = 0;
    uint64_t seed = 0;
    const char *jsonl_path = NULL;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "n:a:s:b:qh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (cli_parse_long("run", "--episodes", optarg, 1, 100000000, &n_episodes) < 0) return CLI_USAGE;
            break;
        case 'a':
            if (!strcmp(optarg, "random")) agent = AGENT_RANDOM;
            else if (!strcmp(optarg, "solve")) agent = AGENT_SOLVE;
            else if (!strcmp(optarg, "stdin")) agent = AGENT_STDIN;
            else return cli_err(CLI_USAGE, "run", "--agent: '%s' is not one of random, solve, stdin", optarg);
            break;
        case 's':
            if (cli_parse_u64("run", "--seed", optarg, &seed) < 0) return CLI_USAGE;
            break;
        case 'b':
            if (cli_parse_long("run", "--batch", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            batch = v;
            break;
        case 'q': quiet = 1; break;
        case 'w': show = 1; break;
        case 'j': jsonl_path = optarg; break;
        case 'h': cli_usage_run(stdout); return CLI_OK;
        default: return cli_bad_option("run", argc, argv, optopt);
        }
    }
    if (optind != argc - 1)
        return cli_err(CLI_USAGE, "run", optind >= argc ? "which environment? (spade run NAME_OR_FILE[:params])"
                                                        : "one environment at a time (got '%s' too)",
                       optind < argc - 1 ? argv[optind + 1] : "");
    if (agent == AGENT_STDIN) batch = 1;
    if (batch > n_episodes) batch = n_episodes;

    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src = NULL;
    size_t len = 0;
    if (cli_load_spec("run", argv[optind], path, sizeof path, params, sizeof params, &src, &len) != CLI_OK)
        return CLI_FAIL;

    int rc = CLI_FAIL;
    struct sigaction stop_sa, old_int, old_term;
    int handlers_set = 0;
    FILE *jsonl = NULL;
    slot *slots = NULL;
    int *ids = NULL, *idx = NULL;
    const char **acts = NULL;
    size_t *lens = NULL;
    spade_step_result *res = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    char err[SPADE_PATH_MAX + 256];

    if (spade_worker_load(sb, path, src, len, &w, &f) != 0 || !w) {
        cli_print_failure("run", path, &f);
        w = NULL;
        goto out;
    }
    const spade_env_info *info = spade_worker_info(w);
    double pvals[SPADE_INFO_MAX_PARAMS];
    if (spade_params_parse(info, params, pvals, err, sizeof err) != 0) {
        cli_err(CLI_FAIL, "run", "%s: params: %s", path, err);
        goto out;
    }
    if (agent == AGENT_SOLVE && !info->has_solve) {
        cli_err(CLI_FAIL, "run", "%s: --agent solve, but the environment has no SOLVE block", path);
        goto out;
    }
    int first = 0;
    if (spade_worker_add_instances(w, (int)batch, info->n_params ? pvals : NULL, &first, &f) != 0) {
        cli_print_failure("run", path, &f);
        goto out;
    }
    if (jsonl_path) {
        jsonl = strcmp(jsonl_path, "-") ? fopen(jsonl_path, "w") : stdout;
        if (!jsonl) {
            cli_err(CLI_FAIL, "run", "--jsonl %s: cannot write: %m", jsonl_path);
            goto out;
        }
    }
    slots = calloc((size_t)batch, sizeof *slots);
    ids = calloc((size_t)batch, sizeof *ids);
    idx = calloc((size_t)batch, sizeof *idx);
    acts = calloc((size_t)batch, sizeof *acts);
    lens = calloc((size_t)batch, sizeof *lens);
    res = calloc((size_t)batch, sizeof *res);
    if (!slots || !ids || !idx || !acts || !lens || !res) {
        cli_err(CLI_FAIL, "run", "out of memory");
        goto out;
    }
    static const char *agent_names[] = {"random", "solve", "stdin"};
    int tty_progress = isatty(2) && n_episodes > 1 && (quiet || !isatty(1)) && !show;
    stats st = {0};
    double t0 = cli_now(), last_progress = 0;
    long next_ep = 0;
    int stdin_ended = 0;

    for (int b = 0; b < batch; b++) {
        slots[b].ep = -1;
        idx[b] = b;
    }
    /* No SA_RESTART: a stdin agent blocked in read() must see the signal too.
     * The sandbox's own waits retry on EINTR. */
    memset(&stop_sa, 0, sizeof stop_sa);
    stop_sa.sa_handler = on_stop_signal;
    sigemptyset(&stop_sa.sa_mask);
    run_stop_signal = 0;
    sigaction(SIGINT, &stop_sa, &old_int);
    sigaction(SIGTERM, &stop_sa, &old_term);
    /* a signal the caller ignores (a shell's background job ignores SIGINT) stays ignored */
    if (old_int.sa_handler == SIG_IGN) sigaction(SIGINT, &old_int, NULL);
    if (old_term.sa_handler == SIG_IGN) sigaction(SIGTERM, &old_term, NULL);
    handlers_set = 1;
    episodes_ctx E = {w, first, seed, slots, idx, res, &next_ep, show, path};
    if (start_episodes(&E, (int)batch, &f) != 0) goto out;

    for (;;) {
        if (run_stop_signal) break;
        int k = 0;
        for (int b = 0; b < batch; b++) {
            slot *s = &slots[b];
            if (s->ep < 0) continue;
            if (agent == AGENT_RANDOM) {
                if (ensure_cap(s, 64) < 0) goto oom;
                s->act_len = spade_random_action(&s->rng, s->act, 64);
            } else if (agent == AGENT_SOLVE) {
                const char *t;
                size_t n;
                if (spade_worker_solve(w, first + b, &t, &n, &f) != 0) {
                    snprintf(err, sizeof err, "%s: solve (episode %d, seed %llu, step %d)", path, s->ep,
                             (unsigned long long)s->seed, s->steps + 1);
                    cli_print_failure("run", err, &f);
                    goto out;
                }
                if (ensure_cap(s, n + 1) < 0) goto oom;
                memcpy(s->act, t, n);
                s->act[n] = 0;
                s->act_len = n;
            } else {
                ssize_t got = getline(&line, &line_cap, stdin);
                if (got < 0) {
                    if (!run_stop_signal) stdin_ended = 1;
                    break;
                }
                while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
                if (ensure_cap(s, (size_t)got + 1) < 0) goto oom;
                memcpy(s->act, line, (size_t)got + 1);
                s->act_len = (size_t)got;
            }
            if (show) show_text("> ", s->ep, s->act, s->act_len);
            ids[k] = first + b;
            acts[k] = s->act;
            lens[k] = s->act_len;
            idx[k++] = b;
        }
        if (stdin_ended || run_stop_signal || k == 0) break;
        if (spade_worker_step(w, k, ids, acts, lens, res, &f) != 0) {
            slot *s = &slots[idx[0]];
            snprintf(err, sizeof err, "%s: step (episode %d, seed %llu, step %d)", path, s->ep,
                     (unsigned long long)s->seed, s->steps + 1);
            cli_print_failure("run", err, &f);
            goto out;
        }
        int restart = 0;
        for (int j = 0; j < k; j++) {
            slot *s = &slots[idx[j]];
            spade_step_result *r = &res[j];
            s->steps++;
            st.total_steps++;
            if (show) {
                show_text("", s->ep, r->obs, r->obs_len);
                if (r->reward != 0) printf("[episode %d] reward %g\n", s->ep, r->reward);
            }
            if (!r->terminated && !r->truncated) continue;
            st.episodes++;
            st.steps += s->steps;
            st.ret_sum += r->episode_return;
            st.wins += r->success != 0;
            if (!quiet)
                printf("episode %d seed %llu: return %.3f, steps %d, success %s (%s)\n", s->ep,
                       (unsigned long long)s->seed, r->episode_return, s->steps, r->success ? "yes" : "no",
                       r->terminated ? "terminated" : "truncated");
            if (jsonl) {
                fprintf(jsonl, "{\"episode\":%d,\"seed\":%llu,\"return\":", s->ep, (unsigned long long)s->seed);
                json_num(jsonl, r->episode_return);
                fprintf(jsonl, ",\"steps\":%d,\"success\":%s,\"terminated\":%s,\"truncated\":%s}\n", s->steps,
                        r->success ? "true" : "false", r->terminated ? "true" : "false",
                        r->truncated ? "true" : "false");
            }
            s->ep = -1;
            if (next_ep + restart < n_episodes) idx[restart++] = idx[j]; /* restart <= j: idx[j] read first */
        }
        if (start_episodes(&E, restart, &f) != 0) goto out;
        if (tty_progress && cli_now() - last_progress > 0.1) {
            progress(&st, n_episodes, t0, 0);
            last_progress = cli_now();
        }
    }
    double dt = cli_now() - t0;
    if (tty_progress) progress(&st, n_episodes, t0, 1);
    double mean_ret = st.episodes ? st.ret_sum / st.episodes : 0, rate = st.episodes ? (double)st.wins / st.episodes : 0;
    double mean_steps = st.episodes ? (double)st.steps / st.episodes : 0, sps = dt > 0 ? st.total_steps / dt : 0;
    printf("%s (%s agent): %ld episodes, mean return %.3f, success rate %.3f, mean steps %.2f, %.0f steps/s\n",
           info->name, agent_names[agent], st.episodes, mean_ret, rate, mean_steps, sps);
    if (jsonl) {
        fprintf(jsonl, "{\"summary\":true,\"env\":");
        cli_json_string(jsonl, info->name, strlen(info->name));
        fprintf(jsonl, ",\"file\":");
        cli_json_string(jsonl, path, strlen(path));
        fprintf(jsonl, ",\"params\":");
        cli_json_string(jsonl, params, strlen(params));
        fprintf(jsonl, ",\"agent\":\"%s\",\"seed\":%llu,\"episodes\":%ld,\"mean_return\":", agent_names[agent],
                (unsigned long long)seed, st.episodes);
        json_num(jsonl, mean_ret);
        fprintf(jsonl, ",\"success_rate\":");
        json_num(jsonl, rate);
        fprintf(jsonl, ",\"mean_steps\":");
        json_num(jsonl, mean_steps);
        fprintf(jsonl, ",\"steps_per_s\":");
        json_num(jsonl, sps);
        fprintf(jsonl, ",\"seconds\":");
        json_num(jsonl, dt);
        fprintf(jsonl, "%s}\n", run_stop_signal ? ",\"interrupted\":true" : "");
    }
    if (run_stop_signal) {
        cli_err(CLI_FAIL, "run", "interrupted (%s) after %ld of %ld episodes", strsignal(run_stop_signal),
                st.episodes, n_episodes);
        goto out;
    }
    if (stdin_ended && st.episodes < n_episodes) {
        cli_err(CLI_FAIL, "run", "standard input ended after %ld of %ld episodes", st.episodes, n_episodes);
        goto out;
    }
    rc = CLI_OK;
    goto out;
oom:
    cli_err(CLI_FAIL, "run", "out of memory");
out:
    if (jsonl && jsonl != stdout && fclose(jsonl) != 0) {
        cli_err(CLI_FAIL, "run", "--jsonl %s: write failed: %m", jsonl_path);
        rc = CLI_FAIL;
    }
    if (slots)
        for (int b = 0; b < batch; b++) free(slots[b].act);
    free(slots), free(ids), free(idx), free(acts), free(lens), free(res), free(line);
    spade_worker_free(w);
    free(src);
    if (handlers_set) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    return rc;
}
