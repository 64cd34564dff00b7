/* report_svg.h — the small chart writer behind `spade report`: one plot over
 * a shared x axis (iterations) with lines, stacked areas or bars, axes with
 * "nice" ticks, labels and a legend, written as a standalone SVG file.
 *
 * What it is: enough drawing for a run report, with no dependency, so that a
 * report needs nothing the user must install. A NAN value is a gap (the line
 * breaks, the area is cut), never a zero; a point with no neighbour is drawn
 * as a dot so a one-iteration run still shows something.
 * What it is not: a general plotting library (one plot per file, linear axes
 * only, no log scale, no text layout beyond a truncated legend label).
 */
#ifndef SPADE_REPORT_SVG_H
#define SPADE_REPORT_SVG_H

#include <stddef.h>

typedef struct cli_plot cli_plot;

/* x[0..n) is copied; it must be increasing (iterations are). Titles are
 * copied; any text is XML-escaped on output. NULL when out of memory. */
cli_plot *cli_plot_new(const char *title, const char *xlabel, const char *ylabel, const double *x, int n);
void cli_plot_free(cli_plot *p);

/* Fixes the y range (rates: 0, 1) instead of fitting it to the data. */
void cli_plot_yrange(cli_plot *p, double lo, double hi);
/* A horizontal reference line (a dashed line at y, with a label at its end). */
int cli_plot_hline(cli_plot *p, double y, const char *label);

/* Series: y[0..n) is copied. Lines draw over areas and bars whatever the
 * order they were added in; stacked areas and bars stack in the order added.
 * width is the line's stroke width (0: 2). Returns 0, or -1 when out of memory
 * (the plot is unchanged). */
int cli_plot_line(cli_plot *p, const char *label, const double *y, double width, int dashed);
int cli_plot_area(cli_plot *p, const char *label, const double *y);
/* Bars: one bar per x of the given width in x units, stacked on the bars
 * added before (a histogram: x = bin centres). */
int cli_plot_bars(cli_plot *p, const char *label, const double *y, double bar_width);

/* Sets the colour ("#rrggbb") of the series added last, instead of the
 * palette's next one: 0, or -1 when there is none or the text is too long. */
int cli_plot_color(cli_plot *p, const char *color);

/* The SVG text (malloc'd, NUL-terminated), or NULL when out of memory. */
char *cli_plot_svg(const cli_plot *p);
/* Writes the SVG to path: 0, or -1 with a message naming the file. */
int cli_plot_write(const cli_plot *p, const char *path, char *err, size_t errlen);

/* Tick positions for [lo, hi]: a step of 1, 2 or 5 times a power of ten
 * giving about `want` ticks, the first tick >= lo, at most cap of them.
 * Returns how many were written to ticks, and *step. */
int cli_plot_ticks(double lo, double hi, int want, double *ticks, int cap, double *step);

#endif /* SPADE_REPORT_SVG_H */
