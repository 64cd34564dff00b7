/* cmd_run.c — `spade run SPEC --episodes N --agent random|solve|stdin`: plays
 * episodes through the episode layer (core/episodes.h) and reports each
 * episode's return, in episode order, and a summary (optionally as JSONL).
 *
 * Episode i always uses seed S + i and (random agent) an action stream seeded
 * from S and its seed, so results do not depend on -b or -w. An episode the
 * sandbox fails in (crash, timeout, ...) is reported and counted by class; the
 * run goes on.
 * What it is not: a trainer or an evaluator of policies (agent/).
 */
#include <float.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents.h"
#include "agent/policy_agent.h"
#include "agent/remote_agent.h"
#include "cli.h"
#include "episodes.h"
#include "served_episodes.h"

void cli_usage_run(FILE *out) {
    fprintf(
        out,
        "usage: spade run SPEC [--episodes N] [--agent random|solve|stdin|policy:CKPT|remote:URL#MODEL] [--seed S]\n"
        "                 [--batch B] [--workers W] [--quiet] [--show] [--jsonl FILE]\n"
        "                 [--reasoning-tokens R] [--transcripts FILE]\n"
        "                 [--servers HOST:PORT,... [--token-file F | --token-env VAR]]\n"
        "\n"
        "Plays N episodes of the environment SPEC (NAME or FILE.c, optionally :key=value,...)\n"
        "and prints each episode's return, steps and success, in episode order, then a\n"
        "summary: mean return, success rate, mean steps, steps per second and the episodes\n"
        "the sandbox failed in, by class. Episode i uses seed S+i.\n"
        "\n"
        "  -n, --episodes N   episodes to play (default 10)\n"
        "  -a, --agent A      random: short random numbers, words and directions (seeded from S);\n"
        "                     remote:URL#MODEL: a model behind an OpenAI-compatible server (docs/scale.md);\n"
        "                     policy:CKPT: the policy of checkpoint CKPT (seeded from S; --show to watch),\n"
        "                     or policy:MODEL, a pretrained model (a known name or a .gguf) in its chat template;\n"
        "                     solve: the environment's SOLVE reference actions;\n"
        "                     stdin: one action per line read from standard input\n"
        "                     (default random)\n"
        "  -s, --seed S       first seed (default 0)\n"
        "  -b, --batch B      episodes played at once, stepped together (default 32; 1 for stdin)\n"
        "  -w, --workers W    sandbox worker processes sharing the batch (default 1)\n"
        "  -q, --quiet        print only the summary\n"
        "      --show         print every observation and action\n"
        "      --servers LIST play on running `spade serve --listen` servers (HOST:PORT, comma-\n"
        "                     separated; the batch is split between them, -w workers each) instead\n"
        "                     of this host's sandbox: the same episodes (docs/scale.md)\n"
        "      --token-file F, --token-env VAR  the servers' shared token\n"
        "      --jsonl FILE   write one JSON object per episode and a final summary object\n"
        "                     (FILE '-' is standard output; the other output goes to stderr)\n"
        "      --reasoning-tokens R  policy or remote: tokens it may write before its answer, which is\n"
        "                     then its last \\boxed{...} (default 0: it answers at once in 64 tokens)\n"
        "      --transcripts FILE  policy: every finished episode's transcript, as the policy read and\n"
        "                     wrote it (docs/transcripts.md), special tokens spelled out\n"
        "  -h, --help         this help\n"
        "\n"
        "Shows progress on a terminal. Exit status: 0 done, 1 an episode failed in the sandbox\n"
        "(crash, timeout, ...; the other episodes are still played), stdin ended early, or\n"
        "interrupted, 2 usage.\n");
}

enum { AGENT_RANDOM, AGENT_SOLVE, AGENT_STDIN, AGENT_POLICY, AGENT_REMOTE };

/* The served model's client of --agent remote:URL#MODEL: it outlives the agent (freed where the policy is). */
static spade_remote *run_remote;

/* Ctrl-C or SIGTERM stops the run between two round trips instead of killing
 * it: the episodes already finished stay in the JSONL (a killed process would
 * lose stdio's buffer and leave a cut line), and the summary is printed. */
static volatile sig_atomic_t run_stop_signal;
/* /dev/null, open while a stdin agent plays, else -1. The handler puts it on fd 0: a
 * signal that lands after the last stop check but before the agent's read() began
 * would otherwise be lost, the read blocking for good; now that read sees EOF, and
 * the stop flag, not the EOF, is what the run reports. */
static int stop_stdin_null = -1;
static void on_stop_signal(int sig) {
    int e = errno;
    run_stop_signal = sig;
    if (stop_stdin_null >= 0) dup2(stop_stdin_null, 0); /* async-signal-safe */
    errno = e;
}

typedef struct textbuf {
    char *p;
    size_t len, cap;
} textbuf;

typedef struct run_ctx {
    FILE *out; /* human lines: stdout, or stderr when the JSONL is on stdout */
    FILE *jsonl; /* or NULL */
    int quiet, show, tty_progress;
    long n_episodes, n_spec;
    uint64_t seed;
    /* requests */
    long next_req;
    /* stats over finished episodes (failed included) */
    long episodes, wins, failed, played, steps_ok;
    double mean_ret; /* a running mean: a sum of returns saturated at DBL_MAX would overflow */
    long total_steps; /* including episodes not finished */
    long by_class[SPADE_OUT_COUNT_];
    double t0, last_progress;
    /* --show: the text of episodes after the one being printed, held until
     * their turn (head is printed as it happens) */
    long head;
    textbuf *pend;
    long pend_cap;
    int oom;
} run_ctx;

static void json_num(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

/* A return as people read it: 3 decimals, or %g for the huge ones (a return
 * saturated at DBL_MAX would print 309 digits). Returns buf. */
static const char *ret_text(double v, char *buf, size_t cap) {
    snprintf(buf, cap, fabs(v) < 1e9 ? "%.3f" : "%.6g", v);
    return buf;
}

static void progress(const run_ctx *c, int final) {
    char rb[32];
    double dt = cli_now() - c->t0;
    fprintf(stderr, "\r\033[K[run] %ld/%ld episodes  mean return %s  success %.1f%%  %.0f steps/s", c->episodes,
            c->n_episodes, ret_text(c->mean_ret, rb, sizeof rb), c->episodes ? 100.0 * c->wins / c->episodes : 0.0,
            dt > 0 ? c->total_steps / dt : 0.0);
    if (final) fputs("\r\033[K", stderr);
    fflush(stderr);
}

static int next_request(void *ctx, spade_ep_request *req) {
    run_ctx *c = ctx;
    if (c->next_req >= c->n_episodes) return 0;
    req->spec = 0;
    req->seed = c->seed + (uint64_t)c->next_req++;
    req->hint = 0;
    return 1;
}

/* Appends to a growable buffer (or prints, for the head episode). */
static void tb_add(run_ctx *c, textbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            c->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* The held text of episode ep, or NULL when ep is the head (printed now). */
static textbuf *pend_of(run_ctx *c, long ep) {
    if (ep <= c->head) return NULL;
    long at = ep - c->head;
    if (at >= c->pend_cap) {
        long cap = c->pend_cap ? c->pend_cap : 64;
        while (cap <= at) cap *= 2;
        textbuf *p = realloc(c->pend, (size_t)cap * sizeof *p);
        if (!p) {
            c->oom = 1;
            return NULL;
        }
        memset(p + c->pend_cap, 0, (size_t)(cap - c->pend_cap) * sizeof *p);
        c->pend = p;
        c->pend_cap = cap;
    }
    return &c->pend[at];
}

/* Every line of text, prefixed "[episode I] " and lead (a multi-line
 * observation gets the prefix on each of its lines). */
static void show_text(run_ctx *c, long ep, const char *lead, const char *text, size_t len) {
    textbuf *b = pend_of(c, ep);
    char pre[64];
    int pn = snprintf(pre, sizeof pre, "[episode %ld] %s", ep, lead);
    size_t i = 0;
    do {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        if (b) {
            tb_add(c, b, pre, (size_t)pn);
            tb_add(c, b, text + i, j - i);
            tb_add(c, b, "\n", 1);
        } else {
            fputs(pre, c->out);
            fwrite(text + i, 1, j - i, c->out);
            fputc('\n', c->out);
        }
        i = j + 1;
    } while (i < len);
}

static void on_event(void *ctx, const spade_ep_event *e) {
    run_ctx *c = ctx;
    if (e->kind == SPADE_EV_OBS && e->step > 0) c->total_steps++;
    if (!c->show) return;
    if (e->kind == SPADE_EV_ACTION) {
        show_text(c, e->episode, "> ", e->text, e->len);
        return;
    }
    show_text(c, e->episode, "", e->text, e->len);
    if (e->step > 0 && e->reward != 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "reward %g", e->reward);
        show_text(c, e->episode, "", line, (size_t)n);
    }
}

/* Outcomes come in episode order, so o is the head's: after its line, the
 * next episode becomes the head (its held text now, the rest as it happens). */
static void next_head(run_ctx *c, long ep) {
    c->head = ep + 1;
    if (!c->show || !c->pend_cap) return;
    free(c->pend[0].p); /* never used: the head prints directly */
    memmove(c->pend, c->pend + 1, (size_t)(c->pend_cap - 1) * sizeof *c->pend);
    memset(&c->pend[c->pend_cap - 1], 0, sizeof *c->pend);
    if (c->pend[0].len) fwrite(c->pend[0].p, 1, c->pend[0].len, c->out);
    free(c->pend[0].p);
    memset(&c->pend[0], 0, sizeof c->pend[0]);
}

static void report(run_ctx *c, const spade_ep_outcome *o);

static void on_outcome(void *ctx, const spade_ep_outcome *o) {
    run_ctx *c = ctx;
    report(c, o);
    next_head(c, o->episode);
}

static void report(run_ctx *c, const spade_ep_outcome *o) {
    char rb[32];
    if (o->end == SPADE_EP_STOPPED) return; /* cut by a signal or the end of stdin: not counted */
    int failed = o->end == SPADE_EP_FAILED;
    c->episodes++;
    c->wins += o->success != 0;
    if (failed) {
        c->failed++;
        if ((unsigned)o->failure.outcome < SPADE_OUT_COUNT_) c->by_class[o->failure.outcome]++;
    } else {
        c->played++;
        /* a mixture of finite values, saturated as the returns are (rounding
         * can carry it just past DBL_MAX) */
        c->mean_ret = c->mean_ret * (1.0 - 1.0 / (double)c->played) + o->ret / (double)c->played;
        if (isinf(c->mean_ret)) c->mean_ret = copysign(DBL_MAX, c->mean_ret);
        c->steps_ok += o->steps;
    }
    if (!c->quiet) {
        if (failed)
            fprintf(c->out, "episode %ld seed %llu: failed after %d step%s: %s: %s\n", o->episode,
                    (unsigned long long)o->seed, o->steps, o->steps == 1 ? "" : "s",
                    spade_outcome_name(o->failure.outcome), o->failure.message);
        else if (o->end == SPADE_EP_AGENT_STOP)
            fprintf(c->out, "episode %ld seed %llu: return %s, steps %d, success %s (agent stop: %s)\n", o->episode,
                    (unsigned long long)o->seed, ret_text(o->ret, rb, sizeof rb), o->steps, o->success ? "yes" : "no",
                    o->stop_reason);
        else
            fprintf(c->out, "episode %ld seed %llu: return %s, steps %d, success %s (%s)\n", o->episode,
                    (unsigned long long)o->seed, ret_text(o->ret, rb, sizeof rb), o->steps, o->success ? "yes" : "no",
                    spade_ep_end_name(o->end));
    }
    if (c->jsonl) {
        FILE *j = c->jsonl;
        fprintf(j, "{\"episode\":%ld,\"seed\":%llu,\"return\":", o->episode, (unsigned long long)o->seed);
        json_num(j, o->ret);
        fprintf(j, ",\"steps\":%d,\"success\":%s,\"terminated\":%s,\"truncated\":%s,\"end\":\"%s\"", o->steps,
                o->success ? "true" : "false", o->end == SPADE_EP_TERMINATED ? "true" : "false",
                o->end == SPADE_EP_TRUNCATED ? "true" : "false", spade_ep_end_name(o->end));
        if (o->end == SPADE_EP_AGENT_STOP) {
            fprintf(j, ",\"reason\":");
            cli_json_string(j, o->stop_reason, strlen(o->stop_reason));
        }
        if (failed) {
            fprintf(j, ",\"failure\":\"%s\",\"message\":", spade_outcome_name(o->failure.outcome));
            cli_json_string(j, o->failure.message, strnlen(o->failure.message, sizeof o->failure.message));
        }
        fputs("}\n", j);
    }
    if (c->tty_progress && cli_now() - c->last_progress > 0.1) {
        progress(c, 0);
        c->last_progress = cli_now();
    }
}

/* What the command line asked for. */
typedef struct run_args {
    long n_episodes, batch, workers;
    int agent_kind, quiet, show, reasoning_tokens;
    const char *policy_ckpt, *jsonl_path, *spec, *transcripts_path;
    uint64_t seed;
    char *servers; /* --servers, or NULL: play here */
    const char *token_file, *token_env;
} run_args;

/* Parses argv into a; returns -1 to go on, or the exit code to return now (--help, a usage error). */
static int parse_run_args(int argc, char **argv, run_args *a) {
    static const struct option longopts[] = {
        {"episodes", required_argument, 0, 'n'},
        {"agent", required_argument, 0, 'a'},
        {"seed", required_argument, 0, 's'},
        {"batch", required_argument, 0, 'b'},
        {"workers", required_argument, 0, 'w'},
        {"quiet", no_argument, 0, 'q'},
        {"show", no_argument, 0, 'S'},
        {"jsonl", required_argument, 0, 'j'},
        {"servers", required_argument, 0, 'V'},
        {"token-file", required_argument, 0, 'T'},
        {"token-env", required_argument, 0, 'E'},
        {"reasoning-tokens", required_argument, 0, 'r'},
        {"transcripts", required_argument, 0, 'X'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    *a = (run_args){.n_episodes = 10, .batch = 32, .workers = 1, .agent_kind = AGENT_RANDOM};
    long v;
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "n:a:s:b:w:qh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            if (cli_parse_long("run", "--episodes", optarg, 1, 100000000, &a->n_episodes) < 0) return CLI_USAGE;
            break;
        case 'a':
            if (!strcmp(optarg, "random"))
                a->agent_kind = AGENT_RANDOM;
            else if (!strcmp(optarg, "solve"))
                a->agent_kind = AGENT_SOLVE;
            else if (!strcmp(optarg, "stdin"))
                a->agent_kind = AGENT_STDIN;
            else if (!strncmp(optarg, "policy:", 7) && optarg[7])
                a->agent_kind = AGENT_POLICY, a->policy_ckpt = optarg + 7;
            else if (!strncmp(optarg, "remote:", 7))
                a->agent_kind = AGENT_REMOTE, a->policy_ckpt = optarg;
            else
                return cli_err(CLI_USAGE, "run",
                               "--agent: '%s' is not one of random, solve, stdin, policy:CKPT, remote:URL#MODEL",
                               optarg);
            break;
        case 's':
            if (cli_parse_u64("run", "--seed", optarg, &a->seed) < 0) return CLI_USAGE;
            break;
        case 'b':
            if (cli_parse_long("run", "--batch", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            a->batch = v;
            break;
        case 'w':
            if (cli_parse_long("run", "--workers", optarg, 1, 64, &v) < 0) return CLI_USAGE;
            a->workers = v;
            break;
        case 'q': a->quiet = 1; break;
        case 'S': a->show = 1; break;
        case 'j': a->jsonl_path = optarg; break;
        case 'V': a->servers = optarg; break;
        case 'T': a->token_file = optarg; break;
        case 'E': a->token_env = optarg; break;
        case 'r':
            if (cli_parse_long("run", "--reasoning-tokens", optarg, 0, 8192, &v) < 0) return CLI_USAGE;
            a->reasoning_tokens = (int)v;
            break;
        case 'X': a->transcripts_path = optarg; break;
        case 'h': cli_usage_run(stdout); return CLI_OK;
        default: return cli_bad_option("run", argc, argv, optopt);
        }
    }
    if (optind != argc - 1)
        return cli_err(CLI_USAGE, "run",
                       optind >= argc ? "which environment? (spade run NAME_OR_FILE[:params])"
                                      : "one environment at a time (got '%s' too)",
                       optind < argc - 1 ? argv[optind + 1] : "");
    a->spec = argv[optind];
    if ((a->token_file || a->token_env) && !a->servers)
        return cli_err(CLI_USAGE, "run", "--token-file/--token-env go with --servers");
    if (a->transcripts_path && a->agent_kind != AGENT_POLICY)
        return cli_err(CLI_USAGE, "run", "--transcripts is for --agent policy:...");
    if (a->reasoning_tokens && a->agent_kind != AGENT_POLICY && a->agent_kind != AGENT_REMOTE)
        return cli_err(CLI_USAGE, "run", "--reasoning-tokens is for --agent policy:... or remote:...");
    if (a->agent_kind == AGENT_STDIN) a->batch = 1;
    if (a->batch > a->n_episodes) a->batch = a->n_episodes;
    return -1;
}

/* --transcripts: each finished episode's render, then a blank line. */
static FILE *run_transcripts;
static void write_transcript(void *ctx, const spade_ep_outcome *o, const spade_transcript *t) {
    char *text = NULL;
    size_t n = 0;
    (void)o;
    if (run_transcripts && spade_transcript_render(t, ctx, &text, &n) == 0) {
        fwrite(text, 1, n, run_transcripts);
        fputs("\n\n", run_transcripts);
    }
    free(text);
}

/* The agent the arguments name (the policy loaded into *policy when it is the one); NULL with the message in err. */
static spade_agent *make_agent(const run_args *a, spade_policy **policy, char *err, size_t errlen) {
    char why[1024];
    if (a->agent_kind == AGENT_POLICY) { /* the policy plays: each live episode a slot of its decoding batch */
        if (cli_load_policy(a->policy_ckpt, 0, policy, why, sizeof why)) {
            snprintf(err, errlen, "--agent policy:%s: %s", a->policy_ckpt, why);
            return NULL;
        }
        spade_policy_agent_opts po;
        spade_policy_agent_opts_default(&po);
        po.max_live = (int)(a->batch > 0 ? a->batch : 32);
        po.max_action_tokens = 64;
        po.reasoning_tokens = a->reasoning_tokens;
        po.seed = a->seed;
        if (a->transcripts_path) {
            if (!(run_transcripts = fopen(a->transcripts_path, "w"))) {
                snprintf(err, errlen, "--transcripts %s: cannot write: %s", a->transcripts_path, strerror(errno));
                return NULL;
            }
            po.on_episode = write_transcript;
            po.ctx = spade_policy_tokenizer(*policy);
        }
        return spade_agent_policy(*policy, &po, err, errlen);
    }
    if (a->agent_kind == AGENT_REMOTE) { /* a served model plays: each live episode a chat (docs/scale.md) */
        char url[1024], model[256];
        if (spade_remote_parse_spec(a->policy_ckpt, url, sizeof url, model, sizeof model, why, sizeof why) < 1) {
            snprintf(err, errlen, "--agent: %s", why);
            return NULL;
        }
        spade_remote_opts ro;
        spade_remote_opts_default(&ro);
        ro.url = url;
        ro.model = model;
        ro.api_key_env = getenv("SPADE_API_KEY_ENV");
        if (spade_remote_new(&run_remote, &ro, err, errlen) < 0) return NULL;
        return spade_agent_remote(run_remote, a->seed, a->reasoning_tokens, ro.max_tokens, err, errlen);
    }
    spade_agent *agent = a->agent_kind == AGENT_RANDOM  ? spade_agent_random(a->seed)
                         : a->agent_kind == AGENT_SOLVE ? spade_agent_solve()
                                                        : spade_agent_stdin(stdin);
    if (!agent) snprintf(err, errlen, "out of memory");
    return agent;
}

/* SIGINT/SIGTERM stop the run between rounds. No SA_RESTART: a stdin agent blocked in read() must see the
 * signal too (the sandbox's own waits retry on EINTR). A signal the caller ignores (a shell's background job
 * ignores SIGINT) stays ignored. */
static void stop_handlers_install(int stdin_agent, struct sigaction *old_int, struct sigaction *old_term) {
    struct sigaction stop_sa;
    memset(&stop_sa, 0, sizeof stop_sa);
    stop_sa.sa_handler = on_stop_signal;
    sigemptyset(&stop_sa.sa_mask);
    run_stop_signal = 0;
    if (stdin_agent) { /* above 2: a closed stdin stays closed until a signal */
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        stop_stdin_null = fd >= 0 && fd < 3 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
        if (fd >= 0 && fd < 3) close(fd);
    }
    sigaction(SIGINT, &stop_sa, old_int);
    sigaction(SIGTERM, &stop_sa, old_term);
    if (old_int->sa_handler == SIG_IGN) sigaction(SIGINT, old_int, NULL);
    if (old_term->sa_handler == SIG_IGN) sigaction(SIGTERM, old_term, NULL);
}

static void stop_handlers_restore(const struct sigaction *old_int, const struct sigaction *old_term) {
    sigaction(SIGINT, old_int, NULL);
    sigaction(SIGTERM, old_term, NULL);
    if (stop_stdin_null >= 0) {
        close(stop_stdin_null);
        stop_stdin_null = -1;
    }
}

static const char *const agent_names[] = {"random", "solve", "stdin", "policy"};

/* The closing line (and, with --jsonl, the summary object) from the run's counts. */
static void write_summary(const run_ctx *c, const run_args *a, const spade_env_info *info, const char *path,
                          const char *params, FILE *jsonl, double dt) {
    double mean_ret = c->mean_ret, rate = c->episodes ? (double)c->wins / c->episodes : 0;
    double mean_steps = c->played ? (double)c->steps_ok / c->played : 0, sps = dt > 0 ? c->total_steps / dt : 0;
    char fails[512] = "", rb[32];
    if (c->failed) {
        size_t k = (size_t)snprintf(fails, sizeof fails, ", failed %ld (", c->failed);
        const char *sep = "";
        for (int i = 0; i < SPADE_OUT_COUNT_ && k < sizeof fails; i++)
            if (c->by_class[i]) {
                k += (size_t)snprintf(fails + k, sizeof fails - k, "%s%s %ld", sep, spade_outcome_name(i),
                                      c->by_class[i]);
                sep = ", ";
            }
        if (k < sizeof fails) snprintf(fails + k, sizeof fails - k, ")");
    }
    fprintf(c->out,
            "%s (%s agent): %ld episode%s, mean return %s, success rate %.3f, mean steps %.2f, %.0f steps/s%s\n",
            info->name, agent_names[a->agent_kind], c->episodes, c->episodes == 1 ? "" : "s",
            ret_text(mean_ret, rb, sizeof rb), rate, mean_steps, sps, fails);
    if (!jsonl) return;
    fprintf(jsonl, "{\"summary\":true,\"env\":");
    cli_json_string(jsonl, info->name, strlen(info->name));
    fprintf(jsonl, ",\"file\":");
    cli_json_string(jsonl, path, strlen(path));
    fprintf(jsonl, ",\"params\":");
    cli_json_string(jsonl, params, strlen(params));
    fprintf(jsonl, ",\"agent\":\"%s\",\"seed\":%llu,\"episodes\":%ld,\"mean_return\":", agent_names[a->agent_kind],
            (unsigned long long)a->seed, c->episodes);
    json_num(jsonl, mean_ret);
    fprintf(jsonl, ",\"success_rate\":");
    json_num(jsonl, rate);
    fprintf(jsonl, ",\"mean_steps\":");
    json_num(jsonl, mean_steps);
    fprintf(jsonl, ",\"steps_per_s\":");
    json_num(jsonl, sps);
    fprintf(jsonl, ",\"seconds\":");
    json_num(jsonl, dt);
    fprintf(jsonl, ",\"failed\":%ld,\"failures\":{", c->failed);
    const char *sep = "";
    for (int i = 0; i < SPADE_OUT_COUNT_; i++)
        if (c->by_class[i]) {
            fprintf(jsonl, "%s\"%s\":%ld", sep, spade_outcome_name(i), c->by_class[i]);
            sep = ",";
        }
    fprintf(jsonl, "}%s}\n", run_stop_signal ? ",\"interrupted\":true" : "");
}

/* --servers: the episodes played on running servers (core/served_episodes.h) instead of here. */
static int run_on_servers(const run_args *a, const spade_ep_spec *spec, run_ctx *c, spade_agent *agent, char *err,
                          size_t errlen) {
    const char *addrs[64];
    int n = 0;
    char token[CLI_TOKEN_MAX + 1];
    size_t token_len = 0;
    if ((a->token_file || a->token_env) &&
        cli_read_token("run", a->token_file, a->token_env, token, sizeof token, &token_len) < 0)
        return snprintf(err, errlen, "no token"), -1;
    for (char *save = NULL, *t = strtok_r(a->servers, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == 64) return snprintf(err, errlen, "--servers: at most 64"), -1;
        addrs[n++] = t;
    }
    if (!n) return snprintf(err, errlen, "--servers: no HOST:PORT given"), -1;
    spade_served_opts so;
    spade_served_opts_default(&so);
    so.servers = addrs;
    so.n_servers = n;
    so.token = a->token_file || a->token_env ? token : NULL;
    so.max_live = (int)a->batch;
    so.workers = (int)a->workers;
    const char *rt = getenv("SPADE_SERVERS_RETRIES"); /* how often a server that went away is dialled again */
    long retries;
    if (rt && *rt) {
        if (cli_parse_long("run", "SPADE_SERVERS_RETRIES", rt, 0, 100, &retries) < 0)
            return snprintf(err, errlen, "bad SPADE_SERVERS_RETRIES"), -1;
        so.retries = (int)retries;
    }
    so.stop = &run_stop_signal;
    so.on_outcome = on_outcome;
    so.on_event = on_event;
    so.ctx = c;
    int rc = spade_served_run(spec, next_request, c, agent, &so, NULL, err, errlen);
    memset(token, 0, sizeof token);
    return rc;
}

/* What one `spade run` holds from its arguments to its summary; its phases
 * fill it in order and run_close frees it. */
typedef struct run_cmd {
    run_args a;
    char path[SPADE_PATH_MAX], params[SPADE_SPEC_PARAMS_MAX];
    char *src;
    size_t len;
    spade_env_info info;
    FILE *jsonl;
    spade_agent *agent;
    spade_policy *policy;
    run_ctx c;
    struct sigaction old_int, old_term;
    int handlers_set;
    char err[SPADE_PATH_MAX + 1024];
} run_cmd;

/* One load first, so that a file that does not compile, bad params or a
 * missing SOLVE are said once, not as N failed episodes: 0, or -1 having said why. */
static int run_check_env(run_cmd *r, spade_sandbox *sb) {
    spade_worker *w = NULL;
    spade_failure f;
    memset(&f, 0, sizeof f);
    if (spade_worker_load(sb, r->path, r->src, r->len, &w, &f) != 0 || !w) {
        cli_print_failure("run", r->path, &f);
        return -1;
    }
    r->info = *spade_worker_info(w);
    spade_worker_free(w);
    double pvals[SPADE_INFO_MAX_PARAMS];
    if (spade_params_parse(&r->info, r->params, pvals, r->err, sizeof r->err) != 0) {
        cli_err(CLI_FAIL, "run", "%s: params: %s", r->path, r->err);
        return -1;
    }
    if (r->a.agent_kind == AGENT_SOLVE && !r->info.has_solve) {
        cli_err(CLI_FAIL, "run", "%s: --agent solve, but the environment has no SOLVE block", r->path);
        return -1;
    }
    return 0;
}

/* The JSONL opened, the agent made, the counts' context set and the stop handlers installed: 0, or -1. */
static int run_open(run_cmd *r) {
    const run_args *a = &r->a;
    if (a->jsonl_path) {
        r->jsonl = strcmp(a->jsonl_path, "-") ? fopen(a->jsonl_path, "w") : stdout;
        if (!r->jsonl) {
            cli_err(CLI_FAIL, "run", "--jsonl %s: cannot write: %m", a->jsonl_path);
            return -1;
        }
    }
    if (!(r->agent = make_agent(a, &r->policy, r->err, sizeof r->err))) {
        cli_err(CLI_FAIL, "run", "%s", r->err);
        return -1;
    }
    run_ctx *c = &r->c;
    c->out = r->jsonl == stdout ? stderr : stdout;
    c->jsonl = r->jsonl;
    c->quiet = a->quiet;
    c->show = a->show;
    c->n_episodes = a->n_episodes;
    c->seed = a->seed;
    /* the progress line shares stderr with nothing else */
    c->tty_progress =
        isatty(2) && a->n_episodes > 1 && !a->show && (a->quiet || !isatty(1)) && (a->quiet || c->out != stderr);
    c->t0 = cli_now();
    stop_handlers_install(a->agent_kind == AGENT_STDIN, &r->old_int, &r->old_term);
    r->handlers_set = 1;
    return 0;
}

/* The episodes, here or on --servers, then the summary and what ended the run. */
static int run_play(run_cmd *r, spade_sandbox *sb) {
    const run_args *a = &r->a;
    run_ctx *c = &r->c;
    spade_ep_spec spec = {
        .filename = r->path, .source = r->src, .len = r->len, .params = r->params, .expected = a->n_episodes};
    spade_episodes_opts o;
    spade_episodes_opts_default(&o);
    o.max_live = (int)a->batch;
    o.workers = (int)a->workers;
    o.stop = &run_stop_signal;
    o.on_outcome = on_outcome;
    o.on_event = on_event;
    o.ctx = c;
    int how = a->servers ? run_on_servers(a, &spec, c, r->agent, r->err, sizeof r->err)
                         : spade_episodes_run(sb, &spec, 1, next_request, c, r->agent, &o, r->err, sizeof r->err);
    if (how < 0) return cli_err(CLI_FAIL, "run", "%s: %s", r->path, r->err);
    if (c->oom) return cli_err(CLI_FAIL, "run", "out of memory");
    double dt = cli_now() - c->t0;
    if (c->tty_progress) progress(c, 1);
    write_summary(c, a, &r->info, r->path, r->params, r->jsonl, dt);
    if (run_stop_signal)
        return cli_err(CLI_FAIL, "run", "interrupted (%s) after %ld of %ld episodes", strsignal(run_stop_signal),
                       c->episodes, a->n_episodes);
    if (how == SPADE_EPISODES_AGENT_END && c->episodes < a->n_episodes)
        return cli_err(CLI_FAIL, "run", "standard input ended after %ld of %ld episodes", c->episodes, a->n_episodes);
    if (c->failed)
        return cli_err(CLI_FAIL, "run", "%s: the sandbox failed in %ld of %ld episodes", r->path, c->failed,
                       c->episodes);
    return CLI_OK;
}

/* Everything r holds closed and freed; rc, or CLI_FAIL when an output could not be finished. */
static int run_close(run_cmd *r, int rc) {
    if (r->jsonl == stdout && fflush(stdout) != 0) {
        cli_err(CLI_FAIL, "run", "--jsonl -: write failed: %m");
        rc = CLI_FAIL;
    }
    if (r->jsonl && r->jsonl != stdout && fclose(r->jsonl) != 0) {
        cli_err(CLI_FAIL, "run", "--jsonl %s: write failed: %m", r->a.jsonl_path);
        rc = CLI_FAIL;
    }
    for (long i = 0; i < r->c.pend_cap; i++) free(r->c.pend[i].p);
    free(r->c.pend);
    spade_agent_free(r->agent);
    spade_policy_free(r->policy);
    spade_remote_free(run_remote);
    run_remote = NULL;
    if (run_transcripts && fclose(run_transcripts) != 0) {
        cli_err(CLI_FAIL, "run", "--transcripts %s: write failed: %m", r->a.transcripts_path);
        rc = CLI_FAIL;
    }
    run_transcripts = NULL;
    free(r->src);
    if (r->handlers_set) stop_handlers_restore(&r->old_int, &r->old_term);
    return rc;
}

int cli_run(spade_sandbox *sb, int argc, char **argv) {
    run_cmd r;
    memset(&r, 0, sizeof r);
    int early = parse_run_args(argc, argv, &r.a);
    if (early >= 0) return early;
    if (cli_load_spec("run", r.a.spec, r.path, sizeof r.path, r.params, sizeof r.params, &r.src, &r.len) != CLI_OK)
        return CLI_FAIL;
    int rc = run_check_env(&r, sb) < 0 || run_open(&r) < 0 ? CLI_FAIL : run_play(&r, sb);
    return run_close(&r, rc);
}
