/* expect: ok
 * tries: to read the parent's secrets out of its own memory: the whole stack (from
 * the lowest to the highest mapped page around its frame, where a forked worker keeps
 * the trainer's argv, environment strings and auxv), the brk heap, and every mapping
 * whose range the test sends in a `scan LO-HI ...` step (test_hostile reads them
 * from the zygote's /proc/PID/maps: the worker is a fork of it). It looks for
 * `SPADE_HOSTILE_SECRET=` (the variable the test sets to a random value) and
 * `--spade-planted-argv-` (the argument it re-executes itself with) and says the
 * bytes that follow each match. The test then checks that no returned text holds
 * the secret or the argv token, and that the scan did find what the test planted in
 * the worker itself (a `plant` step copies its text into STATE, on the heap), so a
 * scan that reads nothing cannot pass. Pages are probed with madvise(MADV_NORMAL),
 * which fails with ENOMEM on an unmapped page, before they are read.
 * Before the zygote was exec'd with an empty environment, the stack scan said the
 * secret back.
 */
#include <spade/dsl.h>
ENV("scan-secrets", "Hostile: scans its own memory for the parent's secrets.", .max_steps = 1000)
STATE { char planted[128]; };
static long sys3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ __volatile__("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
#define PAGE 4096L
#define KEY 0x5a
/* The needles XOR KEY, so that the decoded text never lies in this worker's memory
 * (the source copy the worker received holds only these numbers). */
static const unsigned char needle_env[] = {9, 10, 27, 30, 31, 5, 18, 21, 9, 14, 19, 22, 31, 5, 9, 31, 25, 8, 31, 14, 103};
static const unsigned char needle_argv[] = {119, 119, 41, 42, 59, 62, 63, 119, 42, 54, 59, 52, 46, 63, 62, 119, 59, 40, 61, 44, 119};
static int reports;
static long scanned;

static int mapped(long page) { return sys3(28, page, PAGE, 0) == 0; }

static void report(const unsigned char *p, long left, const char *what)
{
    char out[64];
    int k = 0;
    while (k < 48 && k < left && p[k] > ' ' && p[k] < 127) {
        out[k] = (char)p[k];
        k++;
    }
    out[k] = '\0';
    if (reports++ < 40)
        say("found %s [%s]\n", what, out);
}

static void scan_range(long lo, long hi)
{
    long ne = (long)sizeof needle_env, na = (long)sizeof needle_argv;
    lo &= ~(PAGE - 1);
    for (long page = lo; page < hi; page += PAGE) {
        if (!mapped(page))
            continue;
        long end = page + PAGE;
        /* A match may run over the page end: read on only while the next page is mapped. */
        long limit = end + (end < hi && mapped(end) ? 64 : 0);
        const unsigned char *p = (const unsigned char *)page;
        for (long i = 0; i < PAGE; i++) {
            unsigned char c = p[i] ^ KEY;
            if (c != needle_env[0] && c != needle_argv[0])
                continue;
            long room = limit - (page + i);
            if (room > ne && c == needle_env[0]) {
                long j = 1;
                while (j < ne && (p[i + j] ^ KEY) == needle_env[j]) j++;
                if (j == ne) report(p + i + ne, room - ne, "env");
            }
            if (room > na && c == needle_argv[0]) {
                long j = 1;
                while (j < na && (p[i + j] ^ KEY) == needle_argv[j]) j++;
                if (j == na) report(p + i + na, room - na, "argv");
            }
        }
        scanned += PAGE;
    }
}

/* The mapped run of pages around addr, at most max bytes either side. */
static void scan_around(long addr, long max)
{
    long page = addr & ~(PAGE - 1), lo = page, hi = page + PAGE;
    while (lo - PAGE > 0 && page - lo < max && mapped(lo - PAGE)) lo -= PAGE;
    while (hi - page < max && mapped(hi)) hi += PAGE;
    scan_range(lo, hi);
}

RESET { S->planted[0] = '\0'; say("ready"); }
STEP {
    char here[16];
    reports = 0;
    scanned = 0;
    if (strncmp(action, "plant ", 6) == 0) {
        snprintf(S->planted, sizeof S->planted, "%s", action + 6);
        say("planted");
        return;
    }
    here[0] = 1;
    scan_around((long)here, 64L << 20);          /* the stack */
    scan_around(sys3(12, 0, 0, 0) - 1, 1L << 30); /* brk(0): the end of the heap */
    if (strncmp(action, "scan ", 5) == 0) {
        const char *s = action + 5;
        while (*s) {
            char *e;
            long lo = strtol(s, &e, 16), hi;
            if (e == s || *e != '-') break;
            hi = strtol(e + 1, &e, 16);
            if (hi > lo) scan_range(lo, hi);
            s = e;
            while (*s == ' ') s++;
        }
    }
    say("scanned %ld bytes, %d matches\n", scanned, reports);
}
HINT { say("none"); }
