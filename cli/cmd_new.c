/* cmd_new.c — `spade new NAME`: writes a commented environment template to
 * plugins/NAME.c. The template passes `spade check` as written (tests/test_cli.sh
 * proves it), so a new author starts from something that works.
 * What it is not: a code generator for the designer (designer/ writes its own).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

void cli_usage_new(FILE *out) {
    fprintf(out, "usage: spade new NAME [--dir DIR]\n"
                 "\n"
                 "Writes DIR/NAME.c (default DIR: plugins), a commented template of a small environment\n"
                 "(guess a hidden number with higher/lower feedback) that passes `spade check` as written.\n"
                 "NAME is [a-z0-9_-], starting with a letter or digit, at most 63 characters.\n"
                 "Never overwrites a file.\n"
                 "\n"
                 "  -d, --dir DIR   directory to write to (created if missing; default plugins)\n"
                 "  -h, --help      this help\n");
}

/* @NAME@ is replaced by the environment's name. */
static const char template_text[] =
    "/* @NAME@.c — a spade environment (started from `spade new`; make it yours).\n"
    " *\n"
    " * The agent guesses a hidden number from 1 to `top`; each wrong guess is\n"
    " * answered \"higher\" or \"lower\". It wins by finding the number within\n"
    " * max_steps guesses.\n"
    " *\n"
    " *   spade check @DIR@/@NAME@.c     every check an environment must pass\n"
    " *   spade play @NAME@              play it yourself (:hint, :solve, :help)\n"
    " *   spade run @NAME@ --agent solve --episodes 100\n"
    " *\n"
    " * The rules: RESET must say() the first observation. STEP reads `action`\n"
    " * (any bytes at all: an agent may send anything) and says the next observation;\n"
    " * win(), lose() or finish(success) end the episode. HINT says a strategy, not\n"
    " * the answer. SOLVE act()s a move that wins from the current state. Randomness\n"
    " * comes only from rand_range/rand_real/chance/shuffle, and everything an episode\n"
    " * remembers lives in S (declared by STATE): no static variables that change.\n"
    " */\n"
    "#include <spade/dsl.h>\n"
    "\n"
    "ENV(\"@NAME@\", \"Guess a hidden number; each wrong guess is answered higher or lower.\",\n"
    "    .max_steps = 24, .family = \"logic\")\n"
    "\n"
    "/* A difficulty knob: `spade play @NAME@:top=1000`. (default, min, max) */\n"
    "PARAM(int, top, 100, 2, 1000000)\n"
    "\n"
    "STATE {\n"
    "    long secret; /* the number to find */\n"
    "    long lo, hi; /* what the answers so far prove: lo <= secret <= hi */\n"
    "};\n"
    "\n"
    "RESET {\n"
    "    S->secret = rand_range(1, top);\n"
    "    S->lo = 1;\n"
    "    S->hi = top;\n"
    "    say(\"I am thinking of a number from 1 to %d. Guess it: answer with a number.\", top);\n"
    "}\n"
    "\n"
    "STEP {\n"
    "    long guess = parse_int(action); /* the last integer of the answer, NO_INT if none */\n"
    "    if (guess == NO_INT) {\n"
    "        say(\"That is not a number. It is from %ld to %ld.\", S->lo, S->hi);\n"
    "        return;\n"
    "    }\n"
    "    if (guess == S->secret) {\n"
    "        say(\"Yes, it is %ld.\", guess);\n"
    "        win();\n"
    "        return;\n"
    "    }\n"
    "    if (guess < S->secret) {\n"
    "        if (guess >= S->lo) S->lo = guess + 1;\n"
    "        say(\"Higher than %ld.\", guess);\n"
    "    } else {\n"
    "        if (guess <= S->hi) S->hi = guess - 1;\n"
    "        say(\"Lower than %ld.\", guess);\n"
    "    }\n"
    "}\n"
    "\n"
    "HINT { say(\"Guess the middle of the numbers still possible; each answer halves them.\"); }\n"
    "\n"
    "SOLVE { act(\"%ld\", (S->lo + S->hi) / 2); }\n";

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* template_text with @NAME@ and @DIR@ substituted; malloc'd. */
static char *render(const char *name, const char *dir) {
    size_t cap = sizeof template_text + 64 * (strlen(name) + strlen(dir) + 8);
    char *out = malloc(cap), *o = out;
    if (!out) return NULL;
    for (const char *p = template_text; *p;) {
        const char *sub = NULL;
        size_t skip = 0;
        if (!strncmp(p, "@NAME@", 6))
            sub = name, skip = 6;
        else if (!strncmp(p, "@DIR@", 5))
            sub = dir, skip = 5;
        size_t need = sub ? strlen(sub) : 1;
        if ((size_t)(o - out) + need + 1 >= cap) {
            free(out);
            return NULL;
        }
        if (sub) {
            memcpy(o, sub, need);
            o += need;
            p += skip;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

int cli_new(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {
        {"dir", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = "plugins";
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "d:h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'd': dir = optarg; break;
        case 'h': cli_usage_new(stdout); return CLI_OK;
        default: return cli_bad_option("new", argc, argv, optopt);
        }
    }
    if (optind != argc - 1) return cli_err(CLI_USAGE, "new", "expected one NAME: spade new NAME");
    const char *name = argv[optind];
    if (!spade_name_valid(name))
        return cli_err(CLI_USAGE, "new",
                       "'%s' is not a valid name: use [a-z0-9_-], starting with a letter or digit, at most 63 "
                       "characters",
                       name);
    if (!*dir) return cli_err(CLI_USAGE, "new", "--dir: empty directory name");
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return cli_err(CLI_FAIL, "new", "cannot create directory %s: %s", dir, strerror(errno));
    char path[SPADE_PATH_MAX];
    int k = snprintf(path, sizeof path, "%s/%s.c", dir, name);
    if (k < 0 || (size_t)k >= sizeof path) return cli_err(CLI_USAGE, "new", "--dir: path too long");
    char *text = render(name, dir);
    if (!text) return cli_err(CLI_FAIL, "new", "out of memory");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        free(text);
        if (e == EEXIST) return cli_err(CLI_FAIL, "new", "%s already exists; not overwriting it", path);
        return cli_err(CLI_FAIL, "new", "cannot create %s: %s", path, strerror(e));
    }
    int bad = write_all(fd, text, strlen(text)) < 0;
    bad |= close(fd) < 0;
    free(text);
    if (bad) {
        unlink(path); /* a half-written template would fail check confusingly */
        return cli_err(CLI_FAIL, "new", "cannot write %s: %s", path, strerror(errno));
    }
    printf("wrote %s\n", path);
    printf("next: %s check %s && %s play %s\n", cli_self(), path, cli_self(), name);
    return CLI_OK;
}
