/* report_svg.c — the chart writer of report_svg.h: lines, stacked areas and
 * bars over a linear x axis, as one standalone SVG document.
 *
 * What it is not: a layout engine. The geometry is fixed (800 x 380, the
 * legend in a column right of the plot, so it never hides data); long legend
 * labels are cut, too many entries are summarised as "+ N more".
 */
#include "report_svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_LINE, KIND_AREA, KIND_BARS };

typedef struct series {
    int kind;
    char label[96];
    char color[16];
    double *y;
    double width; /* line stroke, or bar width in x units */
    int dashed;
} series;

struct cli_plot {
    char title[160], xlabel[96], ylabel[96];
    double *x;
    int n;
    series *s;
    int ns;
    int fixed;
    double ylo, yhi;
    double href[8];
    char hlabel[8][64];
    int nh;
};

/* Okabe-Ito's colour-blind-safe eight, then Tol's muted ones. */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
                                      "#882255", "#44AA99", "#999933", "#AA4499", "#DDCC77", "#332288", "#888888"};
#define N_PALETTE (sizeof palette / sizeof *palette)

enum { W = 800, H = 380, PX0 = 72, PX1 = 560, PY0 = 42, PY1 = 320 };

cli_plot *cli_plot_new(const char *title, const char *xlabel, const char *ylabel, const double *x, int n) {
    cli_plot *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->x = malloc(sizeof *p->x * (size_t)(n > 0 ? n : 1));
    if (!p->x) {
        free(p);
        return NULL;
    }
    if (n > 0) memcpy(p->x, x, sizeof *x * (size_t)n);
    p->n = n > 0 ? n : 0;
    snprintf(p->title, sizeof p->title, "%s", title ? title : "");
    snprintf(p->xlabel, sizeof p->xlabel, "%s", xlabel ? xlabel : "");
    snprintf(p->ylabel, sizeof p->ylabel, "%s", ylabel ? ylabel : "");
    return p;
}

void cli_plot_free(cli_plot *p) {
    if (!p) return;
    for (int i = 0; i < p->ns; i++) free(p->s[i].y);
    free(p->s);
    free(p->x);
    free(p);
}

void cli_plot_yrange(cli_plot *p, double lo, double hi) {
    if (!(hi > lo)) return;
    p->fixed = 1;
    p->ylo = lo;
    p->yhi = hi;
}

int cli_plot_hline(cli_plot *p, double y, const char *label) {
    if (p->nh >= 8 || !isfinite(y)) return -1;
    p->href[p->nh] = y;
    snprintf(p->hlabel[p->nh], sizeof p->hlabel[p->nh], "%s", label ? label : "");
    p->nh++;
    return 0;
}

static int add(cli_plot *p, int kind, const char *label, const double *y, double width, int dashed) {
    series *ns = realloc(p->s, sizeof *ns * (size_t)(p->ns + 1));
    if (!ns) return -1;
    p->s = ns;
    series *s = &ns[p->ns];
    memset(s, 0, sizeof *s);
    s->y = malloc(sizeof *s->y * (size_t)(p->n > 0 ? p->n : 1));
    if (!s->y) return -1;
    if (p->n) memcpy(s->y, y, sizeof *y * (size_t)p->n);
    s->kind = kind;
    snprintf(s->label, sizeof s->label, "%s", label ? label : "");
    snprintf(s->color, sizeof s->color, "%s", palette[p->ns % N_PALETTE]);
    s->width = width;
    s->dashed = dashed;
    p->ns++;
    return 0;
}

int cli_plot_line(cli_plot *p, const char *label, const double *y, double width, int dashed) {
    return add(p, KIND_LINE, label, y, width > 0 ? width : 2, dashed);
}
int cli_plot_area(cli_plot *p, const char *label, const double *y) { return add(p, KIND_AREA, label, y, 0, 0); }
int cli_plot_bars(cli_plot *p, const char *label, const double *y, double bar_width) {
    return add(p, KIND_BARS, label, y, bar_width > 0 ? bar_width : 1, 0);
}

int cli_plot_color(cli_plot *p, const char *color) {
    if (!p->ns || !color || strlen(color) >= sizeof p->s[0].color) return -1;
    snprintf(p->s[p->ns - 1].color, sizeof p->s[0].color, "%s", color);
    return 0;
}

int cli_plot_ticks(double lo, double hi, int want, double *ticks, int cap, double *step) {
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi)) {
        if (step) *step = 1;
        if (cap > 0 && isfinite(lo)) {
            ticks[0] = lo;
            return 1;
        }
        return 0;
    }
    if (want < 1) want = 1;
    double raw = (hi - lo) / want, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    double st = (norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10) * mag;
    if (step) *step = st;
    int k = 0;
    for (double i = ceil(lo / st - 1e-9); k < cap; i++) {
        double t = i * st;
        if (t > hi + 1e-9 * st) break;
        ticks[k++] = fabs(t) < 1e-12 * st ? 0 : t;
    }
    return k;
}

/* ---- the text buffer ---- */

typedef struct buf {
    char *p;
    size_t len, cap;
    int oom;
} buf;

__attribute__((format(printf, 2, 3))) static void bf(buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = b->cap ? b->cap : 4096;
        while (nc <= b->len + (size_t)k) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

/* Text as XML character data (and attribute values: quotes escaped too). */
static void esc(buf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': bf(b, "&amp;"); break;
        case '<': bf(b, "&lt;"); break;
        case '>': bf(b, "&gt;"); break;
        case '"': bf(b, "&quot;"); break;
        default:
            if ((unsigned char)*s < 0x20)
                bf(b, " "); /* control bytes are not XML */
            else
                bf(b, "%c", *s);
        }
    }
}

/* A tick label with as many decimals as the step needs. */
static void tick_label(char *out, size_t cap, double v, double step) {
    if (fabs(v) >= 1e6 || (step < 1e-4 && v != 0)) {
        snprintf(out, cap, "%g", v);
        return;
    }
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(out, cap, "%.*f", dec, v);
    if (out[0] == '-' && strspn(out + 1, "0.") == strlen(out + 1)) memmove(out, out + 1, strlen(out));
}

typedef struct frame {
    double xmin, xmax, ylo, yhi;
} frame;

static double sx(const frame *f, double x) { return PX0 + (x - f->xmin) / (f->xmax - f->xmin) * (PX1 - PX0); }
static double sy(const frame *f, double y) { return PY1 - (y - f->ylo) / (f->yhi - f->ylo) * (PY1 - PY0); }

/* The smallest gap between neighbouring x (1 when there is one x). */
static double min_dx(const cli_plot *p) {
    double d = INFINITY;
    for (int i = 1; i < p->n; i++)
        if (p->x[i] - p->x[i - 1] > 0 && p->x[i] - p->x[i - 1] < d) d = p->x[i] - p->x[i - 1];
    return isfinite(d) ? d : 1;
}

/* The data's y extent: lines as they are, stacks by their running sum. */
static int y_extent(const cli_plot *p, double *lo, double *hi) {
    double mn = INFINITY, mx = -INFINITY;
    double *area = calloc((size_t)(p->n ? p->n : 1), sizeof *area),
           *bars = calloc((size_t)(p->n ? p->n : 1), sizeof *bars);
    if (!area || !bars) {
        free(area);
        free(bars);
        return -1;
    }
    for (int k = 0; k < p->ns; k++) {
        const series *s = &p->s[k];
        for (int i = 0; i < p->n; i++) {
            double v = s->y[i];
            if (!isfinite(v)) continue;
            if (s->kind == KIND_AREA)
                v = area[i] += v;
            else if (s->kind == KIND_BARS)
                v = bars[i] += v;
            if (s->kind != KIND_LINE && 0 < mn) mn = 0; /* a stack stands on zero */
            if (v < mn) mn = v;
            if (v > mx) mx = v;
        }
    }
    int data = isfinite(mn);
    for (int h = 0; data && h < p->nh; h++) { /* a reference line alone does not make a range */
        if (p->href[h] < mn) mn = p->href[h];
        if (p->href[h] > mx) mx = p->href[h];
    }
    free(area);
    free(bars);
    *lo = mn;
    *hi = mx;
    return data;
}

static void polyline(buf *b, const frame *f, const double *x, const double *y, int from, int to, const series *s) {
    bf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\"%s points=\"", s->color,
       s->width, s->dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (int i = from; i < to; i++) bf(b, "%s%.2f,%.2f", i > from ? " " : "", sx(f, x[i]), sy(f, y[i]));
    bf(b, "\"/>\n");
}

/* The frame and its ticks: the x range (widened by half a bar), the y range
 * (given, or the data's rounded out to whole ticks), whole-iteration x ticks. */
typedef struct axes {
    frame f;
    double yt[32], ystep, xt[32], xstep;
    int nyt, nxt;
    int has; /* some series has a finite value */
} axes;

/* 0, or -1 out of memory. */
static int plot_axes(const cli_plot *p, axes *ax) {
    frame f;
    int n = p->n;
    double bar_w = 0;
    for (int k = 0; k < p->ns; k++)
        if (p->s[k].kind == KIND_BARS && p->s[k].width > bar_w) bar_w = p->s[k].width;
    f.xmin = n ? p->x[0] : 0;
    f.xmax = n ? p->x[n - 1] : 1;
    if (bar_w > 0) f.xmin -= bar_w / 2, f.xmax += bar_w / 2;
    if (!(f.xmax > f.xmin)) f.xmin -= 0.5, f.xmax += 0.5; /* one iteration: a unit-wide frame around it */
    double lo, hi;
    int has = y_extent(p, &lo, &hi);
    if (has < 0) return -1;
    if (p->fixed) {
        lo = p->ylo;
        hi = p->yhi;
    } else if (!has) {
        lo = 0;
        hi = 1;
    } else if (!(hi > lo)) { /* a flat series: a range around it */
        double d = fabs(lo) > 0 ? fabs(lo) * 0.5 : 1;
        if (lo == 0)
            lo = 0, hi = 1;
        else
            lo -= d, hi += d;
    }
    if (!p->fixed) { /* round the range out to whole ticks */
        cli_plot_ticks(lo, hi, 5, ax->yt, 32, &ax->ystep);
        lo = floor(lo / ax->ystep + 1e-9) * ax->ystep;
        hi = ceil(hi / ax->ystep - 1e-9) * ax->ystep;
    }
    f.ylo = lo;
    f.yhi = hi;
    ax->nyt = cli_plot_ticks(lo, hi, 5, ax->yt, 32, &ax->ystep);
    ax->nxt = cli_plot_ticks(f.xmin, f.xmax, 8, ax->xt, 32, &ax->xstep);
    int whole = 1;
    for (int i = 0; i < n; i++) whole &= p->x[i] == floor(p->x[i]);
    if (ax->xstep < 1 && whole) { /* iterations are whole: no tick at 2.5 */
        ax->xstep = 1;
        ax->nxt = 0;
        for (double t = ceil(f.xmin - 1e-9); t <= f.xmax + 1e-9 && ax->nxt < 32; t++) ax->xt[ax->nxt++] = t;
    }
    ax->f = f;
    ax->has = has;
    return 0;
}

/* The document's head, the title, the grid and the tick labels. */
static void draw_frame(buf *b, const cli_plot *p, const axes *ax) {
    const frame *f = &ax->f;
    bf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    bf(b,
       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
       "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
       W, H, W, H);
    bf(b, "<title>");
    esc(b, p->title);
    bf(b, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    bf(b, "<defs><clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></clipPath></defs>\n",
       PX0 - 5, PY0 - 5, PX1 - PX0 + 10, PY1 - PY0 + 10); /* a line on the frame's edge is drawn whole */
    bf(b, "<text x=\"%d\" y=\"24\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">", PX0);
    esc(b, p->title);
    bf(b, "</text>\n");

    /* grid and ticks */
    bf(b, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (int i = 0; i < ax->nyt; i++)
        bf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.2f\" y2=\"%.2f\"/>\n", PX0, PX1, sy(f, ax->yt[i]), sy(f, ax->yt[i]));
    bf(b, "</g>\n<g fill=\"#444\" text-anchor=\"end\">\n");
    for (int i = 0; i < ax->nyt; i++) {
        char t[32];
        tick_label(t, sizeof t, ax->yt[i], ax->ystep);
        bf(b, "<text x=\"%d\" y=\"%.2f\">%s</text>\n", PX0 - 6, sy(f, ax->yt[i]) + 4, t);
    }
    bf(b, "</g>\n<g fill=\"#444\" text-anchor=\"middle\">\n");
    for (int i = 0; i < ax->nxt; i++) {
        char t[32];
        tick_label(t, sizeof t, ax->xt[i], ax->xstep);
        bf(b, "<text x=\"%.2f\" y=\"%d\">%s</text>\n", sx(f, ax->xt[i]), PY1 + 17, t);
    }
    bf(b, "</g>\n<g stroke=\"#444\" stroke-width=\"1\">\n");
    for (int i = 0; i < ax->nxt; i++)
        bf(b, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%d\" y2=\"%d\"/>\n", sx(f, ax->xt[i]), sx(f, ax->xt[i]), PY1,
           PY1 + 4);
    bf(b, "</g>\n");
}

/* The stacks: bars on each other, areas on each other (a lone finite point
 * as a block as wide as most of an iteration). */
static void draw_stacks(buf *b, const cli_plot *p, const frame *f) {
    int n = p->n;
    double *base = calloc((size_t)(n ? n : 1), sizeof *base), *bbase = calloc((size_t)(n ? n : 1), sizeof *bbase),
           *top = malloc(sizeof *top * (size_t)(n ? n : 1));
    if (!base || !bbase || !top) b->oom = 1;
    double dx = min_dx(p);
    for (int k = 0; !b->oom && k < p->ns; k++) {
        const series *s = &p->s[k];
        if (s->kind == KIND_BARS) {
            for (int i = 0; i < n; i++) {
                if (!isfinite(s->y[i]) || s->y[i] == 0) continue;
                double y0 = bbase[i], y1 = bbase[i] + s->y[i];
                bbase[i] = y1;
                double xa = sx(f, p->x[i] - s->width / 2), xb = sx(f, p->x[i] + s->width / 2);
                bf(b,
                   "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"#ffffff\" "
                   "stroke-width=\"0.5\"/>\n",
                   xa, sy(f, fmax(y0, y1)), xb - xa, fabs(sy(f, y0) - sy(f, y1)), s->color);
            }
            continue;
        }
        if (s->kind != KIND_AREA) continue;
        for (int i = 0; i < n; i++) top[i] = isfinite(s->y[i]) ? base[i] + s->y[i] : NAN;
        for (int i = 0; i < n;) {
            if (!isfinite(top[i])) {
                i++;
                continue;
            }
            int j = i;
            while (j < n && isfinite(top[j])) j++;
            if (j - i == 1) { /* a lone point: a block as wide as most of an iteration */
                double xa = sx(f, fmax(p->x[i] - 0.4 * dx, f->xmin)), xb = sx(f, fmin(p->x[i] + 0.4 * dx, f->xmax));
                bf(b,
                   "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"0.85\"/>\n",
                   xa, sy(f, fmax(top[i], base[i])), xb - xa, fabs(sy(f, base[i]) - sy(f, top[i])), s->color);
            } else {
                bf(b, "<polygon fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\" stroke-width=\"0.5\" points=\"",
                   s->color, s->color);
                for (int q = i; q < j; q++) bf(b, "%.2f,%.2f ", sx(f, p->x[q]), sy(f, top[q]));
                for (int q = j - 1; q >= i; q--) bf(b, "%.2f,%.2f%s", sx(f, p->x[q]), sy(f, base[q]), q > i ? " " : "");
                bf(b, "\"/>\n");
            }
            i = j;
        }
        for (int i = 0; i < n; i++)
            if (isfinite(top[i])) base[i] = top[i];
    }
    free(base);
    free(bbase);
    free(top);
}

/* The lines over the stacks, with their dots: every point of a short run,
 * and always a point alone between gaps. */
static void draw_lines(buf *b, const cli_plot *p, const frame *f) {
    int n = p->n;
    for (int k = 0; !b->oom && k < p->ns; k++) {
        const series *s = &p->s[k];
        if (s->kind != KIND_LINE) continue;
        for (int i = 0; i < n;) {
            if (!isfinite(s->y[i])) {
                i++;
                continue;
            }
            int j = i;
            while (j < n && isfinite(s->y[j])) j++;
            if (j - i > 1) polyline(b, f, p->x, s->y, i, j, s);
            i = j;
        }
        for (int i = 0; i < n; i++) {
            if (!isfinite(s->y[i])) continue;
            int alone = (i == 0 || !isfinite(s->y[i - 1])) && (i == n - 1 || !isfinite(s->y[i + 1]));
            if (alone || n <= 40)
                bf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.1f\" fill=\"%s\"/>\n", sx(f, p->x[i]), sy(f, s->y[i]),
                   alone ? 3.5 : 2.5, s->color);
        }
    }
}

/* The data: stacks first, the reference lines, then lines over them and the
 * references' labels over everything. */
static void draw_data(buf *b, const cli_plot *p, const axes *ax) {
    const frame *f = &ax->f;
    bf(b, "<g clip-path=\"url(#plot)\">\n");
    draw_stacks(b, p, f);
    for (int h = 0; h < p->nh; h++) {
        double y = sy(f, p->href[h]);
        bf(b,
           "<line x1=\"%d\" x2=\"%d\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"#777\" stroke-width=\"1\" "
           "stroke-dasharray=\"3 3\"/>\n",
           PX0, PX1, y, y);
    }
    draw_lines(b, p, f);
    for (int h = 0; h < p->nh; h++) { /* reference labels over the data, on a white halo */
        if (!p->hlabel[h][0]) continue;
        bf(b,
           "<text x=\"%d\" y=\"%.2f\" fill=\"#555\" font-size=\"11\" text-anchor=\"end\" stroke=\"#ffffff\" "
           "stroke-width=\"3\" paint-order=\"stroke\">",
           PX1 - 4, sy(f, p->href[h]) - 4);
        esc(b, p->hlabel[h]);
        bf(b, "</text>\n");
    }
    bf(b, "</g>\n");
    if (!ax->has) {
        bf(b,
           "<text x=\"%d\" y=\"%d\" fill=\"#888\" text-anchor=\"middle\" font-size=\"14\">no values in this "
           "run</text>\n",
           (PX0 + PX1) / 2, (PY0 + PY1) / 2);
    }
}

/* The axes and their labels. */
static void draw_axes(buf *b, const cli_plot *p) {
    bf(b, "<g stroke=\"#444\" stroke-width=\"1\" fill=\"none\"><polyline points=\"%d,%d %d,%d %d,%d\"/></g>\n", PX0,
       PY0, PX0, PY1, PX1, PY1);
    bf(b, "<text x=\"%d\" y=\"%d\" fill=\"#222\" text-anchor=\"middle\">", (PX0 + PX1) / 2, PY1 + 40);
    esc(b, p->xlabel);
    bf(b, "</text>\n<text x=\"16\" y=\"%d\" fill=\"#222\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">",
       (PY0 + PY1) / 2, (PY0 + PY1) / 2);
    esc(b, p->ylabel);
    bf(b, "</text>\n");
}

/* The legend: stacks from the top of the stack down (as they are drawn),
 * then lines; as many as fit, then "+ N more". */
static void draw_legend(buf *b, const cli_plot *p) {
    int n = p->n;
    int order[64], no = 0;
    for (int k = p->ns - 1; k >= 0 && no < 64; k--)
        if (p->s[k].kind != KIND_LINE && p->s[k].label[0]) order[no++] = k;
    for (int k = 0; k < p->ns && no < 64; k++)
        if (p->s[k].kind == KIND_LINE && p->s[k].label[0]) order[no++] = k;
    int fit = (PY1 - PY0) / 20, shown = no > fit ? fit - 1 : no;
    for (int e = 0; e < shown; e++) {
        const series *s = &p->s[order[e]];
        int y = PY0 + 8 + e * 20, lx = PX1 + 18;
        if (s->kind == KIND_LINE)
            bf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%.1f\"%s/>\n", lx,
               lx + 22, y, y, s->color, s->width < 3 ? s->width + 0.5 : s->width,
               s->dashed ? " stroke-dasharray=\"6 4\"" : "");
        else
            bf(b, "<rect x=\"%d\" y=\"%d\" width=\"22\" height=\"12\" fill=\"%s\" fill-opacity=\"0.85\"/>\n", lx, y - 6,
               s->color);
        char lab[56];
        int any = 0;
        for (int i = 0; i < n && !any; i++) any = isfinite(s->y[i]);
        size_t L = strlen(s->label);
        if (L > 30)
            snprintf(lab, sizeof lab, "%.28s..", s->label);
        else
            snprintf(lab, sizeof lab, "%s", s->label);
        if (!any) snprintf(lab + strlen(lab), sizeof lab - strlen(lab), " (no values)");
        bf(b, "<text x=\"%d\" y=\"%d\" fill=\"#222\">", lx + 28, y + 4);
        esc(b, lab);
        bf(b, "</text>\n");
    }
    if (shown < no)
        bf(b, "<text x=\"%d\" y=\"%d\" fill=\"#555\">+ %d more</text>\n", PX1 + 46, PY0 + 12 + shown * 20, no - shown);
}

char *cli_plot_svg(const cli_plot *p) {
    axes ax;
    if (plot_axes(p, &ax) < 0) return NULL;
    buf b = {0};
    draw_frame(&b, p, &ax);
    draw_data(&b, p, &ax);
    draw_axes(&b, p);
    draw_legend(&b, p);
    bf(&b, "</svg>\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

int cli_plot_write(const cli_plot *p, const char *path, char *err, size_t errlen) {
    char *svg = cli_plot_svg(p);
    if (!svg) {
        snprintf(err, errlen, "%s: out of memory drawing the plot", path);
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        free(svg);
        return -1;
    }
    size_t len = strlen(svg);
    int bad = fwrite(svg, 1, len, f) != len;
    bad |= fclose(f) != 0;
    free(svg);
    if (bad) {
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    return 0;
}
