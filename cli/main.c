/* main.c — the spade command-line program: starts the sandbox, then dispatches
 * to a subcommand (cli/cmd_*.c). Not library code.
 *
 * The sandbox's zygote is forked here, FIRST, before any subcommand allocates
 * or loads anything: workers fork from the zygote, so they stay small whatever
 * the parent grows into (docs/architecture.md, "The sandbox").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_pretrain.h"
#include "env.h"
#include "version.h"

/* The policy's OpenMP threads share the cores with the sandbox workers (and,
 * on a shared machine, with everything else): a thread that spin-waits at a
 * barrier holds a core that the workers or a descheduled sibling thread
 * need, and libgomp's default spins at every barrier. So the commands that
 * run the policy wait passively unless the user chose (OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT set); the figures are in docs/performance.md. libgomp reads
 * these variables once, when it loads, before main; and a variable set
 * before main (.preinit_array) is lost when libc's start-up resets environ.
 * Hence one re-execution of spade with the variable set, before the sandbox
 * starts (the libraries load again: ~0.1 s on a busy 2-core machine), only
 * for the commands that run the policy: train, eval, pretrain, and run with
 * a policy:CKPT agent. */
static void omp_defaults(const char *cmd, char **argv) {
    static const char *const policy_cmds[] = {"train", "eval", "pretrain"};
    int runs_policy = 0;
    for (size_t i = 0; i < sizeof policy_cmds / sizeof *policy_cmds; i++) runs_policy |= !strcmp(cmd, policy_cmds[i]);
    for (int i = 2; !strcmp(cmd, "run") && argv[i]; i++) runs_policy |= !strncmp(argv[i], "policy:", 7);
    if (!runs_policy || getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1)) return;
    execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY"); /* no /proc: libgomp's own default, as the variable now says */
}

typedef struct command {
    const char *name;
    cli_cmd_fn fn;
    cli_usage_fn usage;
    int needs_sandbox;
    const char *summary;
} command;

/* pretrain runs no environment: it needs no sandbox, and has its own --help. */
static int cli_pretrain(spade_sandbox *sb, int argc, char **argv) {
    (void)sb;
    return spade_cmd_pretrain(argc, argv);
}

static const command commands[] = {
    {"check", cli_check, cli_usage_check, 1, "run every check on an environment"},
    {"run", cli_run, cli_usage_run, 1, "play episodes with an agent and report returns"},
    {"play", cli_play, cli_usage_play, 1, "play an environment yourself in the terminal"},
    {"new", cli_new, cli_usage_new, 0, "write a commented environment template to plugins/"},
    {"list", cli_list, cli_usage_list, 1, "list the environments found on the search path"},
    {"train", cli_train, cli_usage_train, 1,
     "self-play (designer and agent), or agent RL on a fixed pool (spade train [CONFIG|RUN])"},
    {"eval", cli_eval, cli_usage_eval, 1, "success of a policy per environment, with intervals and references"},
    {"archive", cli_archive, cli_usage_archive, 0, "list, show or export the environments a run built"},
    {"report", cli_report, cli_usage_report, 0, "plots and a markdown summary of a run (spade report RUN_DIR)"},
    {"vendi", cli_vendi, cli_usage_vendi, 0, "diversity (Vendi score) of a set of environment sources"},
    {"demos", cli_demos, cli_usage_demos, 1,
     "write SOLVE's episodes (and varied sources) as transcripts for pretraining"},
    {"pretrain", cli_pretrain, NULL, 0, "pretrain the policy on text files (spade pretrain CONFIG)"},
    {"tokenizer", cli_tokenizer, cli_usage_tokenizer, 0,
     "train or inspect a BPE tokenizer (train, stats, encode, decode)"},
    {"serve", cli_serve, cli_usage_serve, 1, "serve environments over JSON lines (stdio, unix or tcp socket)"},
    {"generate", cli_generate, cli_usage_generate, 0,
     "continue a prompt with a model or checkpoint (spade generate MODEL)"},
    {"model", cli_model, cli_usage_model, 0, "fetch, list or describe pretrained GGUF models (spade model fetch NAME)"},
    {"export", cli_export, cli_usage_export, 0,
     "write a Llama-family policy as a GGUF file for llama.cpp (spade export CKPT --gguf OUT.gguf)"},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *out) {
    fprintf(out, "usage: spade COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "  %-9s %s\n", "help", "show this, or a command's help: spade help COMMAND");
    fprintf(out, "\nspade --version prints the version. Every command takes --help.\n"
                 "Environments are named NAME or FILE.c, with params as NAME:key=value,...\n"
                 "and are found in $SPADE_PATH, ./plugins, ./stdenv and the installed stdenv.\n"
                 "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static const command *find(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

static int wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) return 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    }
    return 0;
}

/* A program started with stdin, stdout or stderr closed would hand that number
 * to the first file or socket it opens: the sandbox's socket would then be read
 * as actions (spade run --agent stdin) or written with text. Fill the gaps. */
static void open_standard_fds(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        if (fd == 0) {
            /* stdin: a pipe with no writer reads as EOF, whatever /dev/null is */
            int p[2];
            if (pipe(p) == 0) close(p[1]); /* p[0] took number 0: the lowest free */
        } else {
            (void)open("/dev/null", O_WRONLY);
        }
    }
}

int main(int argc, char **argv) {
    open_standard_fds();
    cli_set_self(argv[0]);
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    omp_defaults(name, argv);
    if (!strcmp(name, "--version") || !strcmp(name, "-V") || !strcmp(name, "version")) {
        printf("spade %s (environment ABI %d)\n", spade_version(), SPADE_ENV_ABI);
        return CLI_OK;
    }
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(name, "help")) {
        if (argc < 3) {
            usage(stdout);
            return CLI_OK;
        }
        const command *c = find(argv[2]);
        if (!c) return cli_err(CLI_USAGE, NULL, "no command '%s' (spade help lists them)", argv[2]);
        if (c->usage) {
            c->usage(stdout);
            return CLI_OK;
        }
        char *hargv[] = {(char *)c->name, "--help", NULL};
        return c->fn(NULL, 2, hargv);
    }
    const command *c = find(name);
    if (!c) {
        cli_err(CLI_USAGE, NULL, "unknown command '%s'", name);
        usage(stderr);
        return CLI_USAGE;
    }
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (wants_help(sub_argc, sub_argv) && c->usage) {
        c->usage(stdout);
        return CLI_OK;
    }
    spade_sandbox *sb = NULL;
    if (c->needs_sandbox) {
        char err[1024];
        if (spade_sandbox_new(&sb, NULL, err, sizeof err) != 0)
            return cli_err(CLI_FAIL, c->name, "cannot start the sandbox: %s", err);
    }
    int rc = c->fn(sb, sub_argc, sub_argv);
    fflush(stdout);
    spade_sandbox_free(sb);
    return rc;
}
