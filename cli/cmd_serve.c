/* cmd_serve.c — `spade serve`: the JSON-lines protocol (docs/protocol.md) over
 * standard input and output, or over a Unix socket or a TCP port for several
 * clients at once (one thread per connection). TCP off the loopback is served
 * only with a shared token (--token-file, --token-env) that every client's
 * hello must carry; TLS is a tunnel's or a proxy's job (docs/scale.md).
 *
 * What it is: the transports. Lines are read whole up to the line cap; a
 * longer line is answered with a line_too_long error and skipped to its
 * newline, and the connection goes on. A connection that ends (EOF, reset,
 * a write that fails) frees everything it made, so its workers are killed and
 * reaped. What it is not: the request handling (serve_proto.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

void cli_usage_serve(FILE *out) {
    fprintf(out, "usage: spade serve [--stdio | --listen unix:PATH | --listen tcp:HOST:PORT]\n"
                 "                   [--token-file FILE | --token-env VAR]\n"
                 "                   [--max-envs N] [--max-instances N] [--max-workers N]\n"
                 "                   [--max-line BYTES] [--max-clients N]\n"
                 "\n"
                 "Serves environments over a JSON-lines protocol (docs/protocol.md): one request\n"
                 "object per line, one response object per line, in order. The Python package\n"
                 "(python/, docs/python.md) starts `spade serve --stdio` itself.\n"
                 "\n"
                 "      --stdio            one client on standard input and output (the default)\n"
                 "      --listen ADDR      unix:PATH (a socket file, mode 0600) or tcp:HOST:PORT (PORT 0:\n"
                 "                         any free port); HOST other than 127.0.0.1, ::1 or localhost\n"
                 "                         (0.0.0.0, ::, an address of this host) needs a token;\n"
                 "                         prints 'listening on ADDR' once it accepts clients\n"
                 "      --token-file FILE  a shared token (the file's first line, 16..4096 bytes) that\n"
                 "                         every client's hello must carry (docs/protocol.md)\n"
                 "      --token-env VAR    the token is the value of the environment variable VAR\n"
                 "      --max-envs N       environment handles per connection (default 64)\n"
                 "      --max-instances N  instances per connection, all environments (default 4096)\n"
                 "      --max-workers N    worker processes per connection (default 32)\n"
                 "      --max-line BYTES   longest request line (default 16777216)\n"
                 "      --max-clients N    connections at once on a socket (default 32)\n"
                 "  -h, --help             this help\n"
                 "\n"
                 "Exit status: 0 the client (stdio) or a signal ended it, 1 the socket could not be\n"
                 "opened, 2 usage.\n");
}

static volatile sig_atomic_t serve_stop;
static void on_stop(int sig) { serve_stop = sig; }

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Serves one client until EOF or a failed write. */
static void serve_fds(spade_sandbox *sb, const serve_limits *lim, int in, int out) {
    serve_conn *c = serve_conn_new(sb, lim);
    spade_jbuf resp = {0};
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    if (!c || !buf) {
        serve_error_line(&resp, "internal", "out of memory");
        if (!resp.oom) (void)write_all(out, resp.p, resp.len);
        goto out;
    }
    int discarding = 0; /* inside a line over the cap: drop bytes up to its newline */
    int closing = 0; /* a response ended the connection (no token): write it, then stop */
    for (;;) {
        if (cap - len < 4096) {
            size_t ncap = cap * 2;
            char *p = realloc(buf, ncap);
            if (!p) break;
            buf = p;
            cap = ncap;
        }
        ssize_t k = read(in, buf + len, cap - len);
        if (k < 0 && errno == EINTR) {
            if (serve_stop) break;
            continue;
        }
        if (k <= 0) break;
        len += (size_t)k;
        size_t start = 0;
        spade_jbuf_clear(&resp);
        for (;;) {
            char *nl = memchr(buf + start, '\n', len - start);
            if (!nl) break;
            size_t n = (size_t)(nl - (buf + start));
            if (discarding) {
                discarding = 0;
            } else if (n > serve_conn_max_line(c)) {
                char msg[128];
                snprintf(msg, sizeof msg, "a request line of %zu bytes is over the cap of %zu", n,
                         serve_conn_max_line(c));
                serve_error_line(&resp, "line_too_long", msg);
                if (serve_conn_max_line(c) < lim->max_line) closing = 1; /* before the token */
            } else {
                size_t m = n;
                if (m && buf[start + m - 1] == '\r') m--;
                size_t blank = 0;
                while (blank < m && (buf[start + blank] == ' ' || buf[start + blank] == '\t')) blank++;
                if (blank < m) {
                    size_t before = resp.len;
                    serve_handle_line(c, buf + start, m, &resp);
                    if (resp.oom) {
                        resp.oom = 0;
                        resp.len = before;
                        serve_error_line(&resp, "internal", "out of memory writing the response");
                    }
                    if (serve_conn_closing(c)) closing = 1;
                }
            }
            start += n + 1;
            if (closing) break; /* the lines after it are not served */
        }
        if (resp.len && write_all(out, resp.p, resp.len) < 0) break;
        if (closing) break;
        memmove(buf, buf + start, len - start);
        len -= start;
        if (len > serve_conn_max_line(c)) {
            /* no newline yet and already over the cap: say so now, drop what came */
            if (!discarding) {
                char msg[128];
                snprintf(msg, sizeof msg, "a request line is over the cap of %zu bytes", serve_conn_max_line(c));
                spade_jbuf_clear(&resp);
                serve_error_line(&resp, "line_too_long", msg);
                if (write_all(out, resp.p, resp.len) < 0) break;
                if (serve_conn_max_line(c) < lim->max_line) break; /* before the token: the connection ends */
            }
            discarding = 1;
            len = 0;
            if (cap > (1u << 20)) { /* give back a buffer a long line grew */
                char *p = realloc(buf, 65536);
                if (p) buf = p, cap = 65536;
            }
        }
    }
out:
    free(buf);
    spade_jbuf_free(&resp);
    serve_conn_free(c);
}

/* ---- sockets -------------------------------------------------------------------- */
typedef struct server {
    spade_sandbox *sb;
    serve_limits lim;
    pthread_mutex_t mu;
    int active;
} server;

typedef struct client {
    server *s;
    int fd;
} client;

static void *client_thread(void *arg) {
    client *cl = arg;
    serve_fds(cl->s->sb, &cl->s->lim, cl->fd, cl->fd);
    close(cl->fd);
    pthread_mutex_lock(&cl->s->mu);
    cl->s->active--;
    pthread_mutex_unlock(&cl->s->mu);
    free(cl);
    return NULL;
}

/* TCP on an address that is not the loopback (0.0.0.0, ::, one of this host's):
 * served only with a token, which the caller checked. */
static int open_tcp_any(const char *addr, const char *host, long port, char *shown, size_t shown_cap) {
    char ports[16];
    snprintf(ports, sizeof ports, "%ld", port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gr = getaddrinfo(host[0] ? host : NULL, ports, &hints, &res);
    if (gr != 0) return cli_err(-2, "serve", "--listen %s: host '%s': %s", addr, host, gai_strerror(gr));
    int fd = -1, why = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 64) < 0) {
            why = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) return cli_err(-1, "serve", "--listen %s: %s", addr, strerror(why));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[NI_MAXHOST] = "?", sv[NI_MAXSERV] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        (void)getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, sv, sizeof sv, NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(shown, shown_cap, ss.ss_family == AF_INET6 ? "tcp:[%s]:%s" : "tcp:%s:%s", h, sv);
    return fd;
}

static int open_listener(const char *addr, int have_token, char *shown, size_t shown_cap, char *unix_path,
                         size_t upcap) {
    unix_path[0] = 0;
    if (!strncmp(addr, "unix:", 5)) {
        const char *path = addr + 5;
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        if (!*path || strlen(path) >= sizeof sa.sun_path)
            return cli_err(-2, "serve", "--listen %s: the socket path must be 1..%zu bytes", addr,
                           sizeof sa.sun_path - 1);
        strcpy(sa.sun_path, path);
        struct stat st;
        /* a socket left by an earlier server is replaced; any other file is not touched */
        if (lstat(path, &st) == 0) {
            if (!S_ISSOCK(st.st_mode))
                return cli_err(-1, "serve", "--listen %s: %s exists and is not a socket", addr, path);
            unlink(path);
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return cli_err(-1, "serve", "socket: %s", strerror(errno));
        mode_t old = umask(0177);
        int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
        umask(old);
        if (rc < 0 || listen(fd, 64) < 0) {
            cli_err(-1, "serve", "--listen %s: %s", addr, strerror(errno));
            close(fd);
            return -1;
        }
        snprintf(unix_path, upcap, "%s", path);
        snprintf(shown, shown_cap, "unix:%s", path);
        return fd;
    }
    if (!strncmp(addr, "tcp:", 4)) {
        const char *hp = addr + 4, *colon = strrchr(hp, ':');
        if (!colon) return cli_err(-2, "serve", "--listen %s: expected tcp:HOST:PORT", addr);
        char host[64];
        size_t hl = (size_t)(colon - hp);
        if (hl >= sizeof host) return cli_err(-2, "serve", "--listen %s: host too long", addr);
        memcpy(host, hp, hl);
        host[hl] = 0;
        if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = 0;
        }
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || port < 0 || port > 65535)
            return cli_err(-2, "serve", "--listen %s: '%s' is not a port in [0, 65535]", addr, colon + 1);
        int six = !strcmp(host, "::1");
        if (!six && strcmp(host, "127.0.0.1") && strcmp(host, "localhost")) {
            if (!have_token)
                return cli_err(-2, "serve",
                               "--listen %s: '%s' is not a loopback address (127.0.0.1, ::1, localhost), and off "
                               "the loopback a client must authenticate: give a shared token with --token-file "
                               "FILE or --token-env VAR (anyone who reaches the port could otherwise compile and "
                               "run code here)",
                               addr, host);
            return open_tcp_any(addr, host, port, shown, shown_cap);
        }
        int fd = socket(six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return cli_err(-1, "serve", "socket: %s", strerror(errno));
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        int rc;
        unsigned short bound = 0;
        if (six) {
            struct sockaddr_in6 sa;
            memset(&sa, 0, sizeof sa);
            sa.sin6_family = AF_INET6;
            sa.sin6_port = htons((unsigned short)port);
            sa.sin6_addr = in6addr_loopback;
            rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
            socklen_t sl = sizeof sa;
            if (rc == 0 && getsockname(fd, (struct sockaddr *)&sa, &sl) == 0) bound = ntohs(sa.sin6_port);
        } else {
            struct sockaddr_in sa;
            memset(&sa, 0, sizeof sa);
            sa.sin_family = AF_INET;
            sa.sin_port = htons((unsigned short)port);
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
            socklen_t sl = sizeof sa;
            if (rc == 0 && getsockname(fd, (struct sockaddr *)&sa, &sl) == 0) bound = ntohs(sa.sin_port);
        }
        if (rc < 0 || listen(fd, 64) < 0) {
            cli_err(-1, "serve", "--listen %s: %s", addr, strerror(errno));
            close(fd);
            return -1;
        }
        snprintf(shown, shown_cap, "tcp:%s:%u", six ? "[::1]" : "127.0.0.1", bound);
        return fd;
    }
    return cli_err(-2, "serve", "--listen %s: expected unix:PATH or tcp:HOST:PORT", addr);
}

static int serve_socket(spade_sandbox *sb, const serve_limits *lim, const char *addr) {
    char shown[256], upath[200];
    int lfd = open_listener(addr, lim->token != NULL, shown, sizeof shown, upath, sizeof upath);
    if (lfd == -2) return CLI_USAGE;
    if (lfd < 0) return CLI_FAIL;
    server s = {.sb = sb, .lim = *lim, .mu = PTHREAD_MUTEX_INITIALIZER};
    printf("listening on %s\n", shown);
    fflush(stdout);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (!serve_stop) {
        struct pollfd p = {lfd, POLLIN, 0};
        int pr = poll(&p, 1, 200);
        if (pr <= 0) continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        pthread_mutex_lock(&s.mu);
        int busy = s.active >= lim->max_clients;
        if (!busy) s.active++;
        pthread_mutex_unlock(&s.mu);
        if (busy) {
            spade_jbuf b = {0};
            char msg[128];
            snprintf(msg, sizeof msg, "the server has %d clients, the most it serves at once", lim->max_clients);
            serve_error_line(&b, "limit", msg);
            if (!b.oom) (void)write_all(fd, b.p, b.len);
            spade_jbuf_free(&b);
            close(fd);
            continue;
        }
        /* a response is one write; without this, its last segment can wait for a delayed ACK */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        client *cl = malloc(sizeof *cl);
        pthread_t t;
        if (!cl || (cl->s = &s, cl->fd = fd, pthread_create(&t, &attr, client_thread, cl) != 0)) {
            free(cl);
            close(fd);
            pthread_mutex_lock(&s.mu);
            s.active--;
            pthread_mutex_unlock(&s.mu);
        }
    }
    pthread_attr_destroy(&attr);
    close(lfd);
    if (upath[0]) unlink(upath);
    /* Client threads still running own workers; the process exit ends them
     * (the zygote and its workers die with it: PR_SET_PDEATHSIG). */
    return CLI_OK;
}

int cli_serve(spade_sandbox *sb, int argc, char **argv) {
    static const struct option longopts[] = {
        {"stdio", no_argument, 0, 's'},
        {"listen", required_argument, 0, 'l'},
        {"max-envs", required_argument, 0, 'e'},
        {"max-instances", required_argument, 0, 'i'},
        {"max-workers", required_argument, 0, 'w'},
        {"max-line", required_argument, 0, 'L'},
        {"max-clients", required_argument, 0, 'c'},
        {"token-file", required_argument, 0, 'T'},
        {"token-env", required_argument, 0, 'E'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    serve_limits lim;
    serve_limits_default(&lim);
    const char *listen_addr = NULL, *token_file = NULL, *token_env = NULL;
    int stdio = 0, ch;
    long v;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 's': stdio = 1; break;
        case 'l': listen_addr = optarg; break;
        case 'e':
            if (cli_parse_long("serve", "--max-envs", optarg, 1, 100000, &v) < 0) return CLI_USAGE;
            lim.max_envs = (int)v;
            break;
        case 'i':
            if (cli_parse_long("serve", "--max-instances", optarg, 1, 1 << 20, &v) < 0) return CLI_USAGE;
            lim.max_instances = (int)v;
            break;
        case 'w':
            if (cli_parse_long("serve", "--max-workers", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            lim.max_workers = (int)v;
            break;
        case 'L':
            if (cli_parse_long("serve", "--max-line", optarg, 64, 1L << 30, &v) < 0) return CLI_USAGE;
            lim.max_line = (size_t)v;
            break;
        case 'c':
            if (cli_parse_long("serve", "--max-clients", optarg, 1, 4096, &v) < 0) return CLI_USAGE;
            lim.max_clients = (int)v;
            break;
        case 'T': token_file = optarg; break;
        case 'E': token_env = optarg; break;
        case 'h': cli_usage_serve(stdout); return CLI_OK;
        default: return cli_bad_option("serve", argc, argv, optopt);
        }
    }
    if (optind != argc) return cli_err(CLI_USAGE, "serve", "unexpected argument '%s'", argv[optind]);
    if (stdio && listen_addr) return cli_err(CLI_USAGE, "serve", "--stdio or --listen, not both");
    if (token_file && token_env) return cli_err(CLI_USAGE, "serve", "--token-file or --token-env, not both");
    static char token[CLI_TOKEN_MAX + 1]; /* lives as long as the server: every connection points at it */
    if (token_file || token_env) {
        if (cli_read_token("serve", token_file, token_env, token, sizeof token, &lim.token_len) < 0) return CLI_USAGE;
        lim.token = token;
    }
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-write is a failed write, not a dead server */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (!listen_addr) {
        serve_fds(sb, &lim, 0, 1);
        return CLI_OK;
    }
    return serve_socket(sb, &lim, listen_addr);
}
