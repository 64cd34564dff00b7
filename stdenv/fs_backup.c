/* fs_backup.c — find every .log file in a small file system and back it up.
 * Teaches: exploring with ls, then acting with read/mkdir/write, and checking
 * work before declaring it done. Params: dirs = directories to search; files =
 * files among them; logs = how many of those are .log files (clamped to files). */
#include <spade/dsl.h>
ENV("fs_backup", "Back up every .log file of an in-memory file system.", .family = "tools", .max_steps = 80)
PARAM(int, dirs, 3, 1, 10)
PARAM(int, files, 5, 1, 16)
PARAM(int, logs, 2, 1, 8)
STATE { char path[64][48], data[64][16], out[64 * 50]; int dir[64], n; }; /* out fits a listing of every entry */
static const char *NAMES[16] = {"app", "db", "cron", "mail", "auth", "web", "cache", "boot", "notes", "todo", "report", "main", "draft", "build", "sync", "audit"};
static const char *DIRS[10] = {"var", "home", "srv", "opt", "data", "old", "tmp", "etc", "jobs", "misc"};
static int find(const char *p) { for (int i = 0; i < S->n; i++) if (!strcmp(S->path[i], p)) return i; return -1; }
static int add(const char *p, const char *data, int is_dir) { /* the parent must be "/" or an existing directory */
    const char *slash = strrchr(p, '/'); char up[48] = {0};
    if (p[0] != '/' || !slash[1] || strlen(p) >= 48 || S->n == 64 || find(p) >= 0) return 0;
    memcpy(up, p, slash - p); if (slash != p && (find(up) < 0 || !S->dir[find(up)])) return 0;
    memcpy(S->path[S->n], p, strlen(p) + 1); snprintf(S->data[S->n], 16, "%s", data); S->dir[S->n++] = is_dir; return 1;
}
TOOL(ls, "List a directory (subdirectories end with /).", const char *, (const char *path)) {
    size_t len = strlen(path), used = 0;
    if (len && path[len - 1] == '/') len--; /* "/var/" as "/var", and "/" as the root */
    for (int i = 0; i < S->n; i++) /* direct children: path + "/" + a name with no further slash */
        if (!strncmp(S->path[i], path, len) && S->path[i][len] == '/' && !strchr(S->path[i] + len + 1, '/'))
            used += snprintf(S->out + used, sizeof S->out - used, "%s%s ", S->path[i] + len + 1, S->dir[i] ? "/" : "");
    return used ? S->out : "(empty or no such directory)";
}
TOOL(read, "Return the contents of a file.", const char *, (const char *path)) { int i = find(path); return i >= 0 && !S->dir[i] ? S->data[i] : "error: no such file"; }
TOOL(mkdir, "Create a directory; its parent must exist.", const char *, (const char *path)) { return add(path, "", 1) ? "ok" : "error: cannot create"; }
TOOL(write, "Create or overwrite a file with text (at most 15 characters).", const char *, (const char *path, const char *text)) {
    int i = find(path);
    if (i >= 0 && !S->dir[i]) { snprintf(S->data[i], 16, "%s", text); return "ok"; }
    return add(path, text, 0) ? "ok" : "error: cannot write";
}
static int is_log(int i) { return strstr(S->path[i], ".log") && strncmp(S->path[i], "/backup/", 8); }
static int backed_up(int i) { char b[64]; snprintf(b, 64, "/backup%s", strrchr(S->path[i], '/')); return find(b) >= 0 && !strcmp(S->data[find(b)], S->data[i]); }
RESET {
    char p[48], d[16]; int names[16], want = logs < files ? logs : files;
    for (int k = 0; k < dirs; k++) { /* each directory under the root or under an earlier one */
        int up = rand_range(-1, S->n - 1);
        snprintf(p, 48, "%s/%s", up < 0 ? "" : S->path[up], DIRS[k]); add(p, "", 1);
    }
    for (int k = 0; k < 16; k++) names[k] = k; /* then shuffled: distinct names, so backups cannot collide */
    shuffle(names, 16, sizeof names[0]);
    for (int k = 0; k < files; k++) {
        snprintf(p, 48, "%s/%s.%s", S->path[rand_range(0, dirs - 1)], NAMES[names[k]], k < want ? "log" : k % 2 ? "txt" : "cfg");
        snprintf(d, 16, "entry %d", (int)rand_range(1000, 9999)); add(p, d, 0);
    }
    say("Copy every .log file, wherever it is, into a new directory /backup with the same name and contents (/var/x/app.log\n"
        "goes to /backup/app.log). Tools: ls(path), read(path), mkdir(path), write(path, text); the root is \"/\". Say done at the end.\n");
}
STEP {
    char w[16]; int ok = 1; parse_word(action, w, sizeof w);
    if (!str_ieq(w, "done")) { say("Use a tool, or say done when finished.\n"); return; }
    for (int i = 0; i < S->n; i++) if (is_log(i)) ok &= backed_up(i);
    if (ok) { say("Every log is backed up.\n"); win(); } else { say("Some .log file is missing from /backup or differs.\n"); lose(); }
}
HINT { say("List directories recursively from \"/\" and note every path ending in .log; create /backup once, then read each log and write its exact contents to /backup/NAME. Check with ls(\"/backup\") before saying done."); }
SOLVE {
    if (find("/backup") < 0) { act("mkdir(\"/backup\")"); return; }
    for (int i = 0; i < S->n; i++)
        if (is_log(i) && !backed_up(i)) { act("write(\"/backup%s\", \"%s\")", strrchr(S->path[i], '/'), S->data[i]); return; }
    act("done");
}
