/* test_report_svg.c — Check suite for the chart writer behind `spade report`
 * (cli/report_svg.h).
 *
 * What it is: tick steps of 1, 2 or 5 times a power of ten over ranges people
 * meet (rates, regrets, iteration counts); a NAN breaks a line (two segments,
 * never a drop to zero), a point alone between gaps is a dot; stacked areas
 * stand on the ones below; labels are XML-escaped; a plot with no value says
 * so. What it is not: a test of how a plot looks, nor of the command
 * (tests/test_report.sh runs `spade report`).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_svg.h"
#include "testutil.h"

static int count(const char *hay, const char *needle) {
    int k = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) k++;
    return k;
}

START_TEST(ticks_are_round) {
    double t[32], step;
    int n = cli_plot_ticks(0, 1, 5, t, 32, &step);
    ck_assert_int_eq(n, 6);
    ck_assert(fabs(step - 0.2) < 1e-12);
    ck_assert(fabs(t[5] - 1) < 1e-12);
    n = cli_plot_ticks(-0.05, 0.3, 5, t, 32, &step);
    ck_assert(fabs(step - 0.05) < 1e-12);
    ck_assert_int_eq(n, 8);
    ck_assert(fabs(t[0] + 0.05) < 1e-12);
    n = cli_plot_ticks(0, 37, 8, t, 32, &step);
    ck_assert(step == 5);
    ck_assert_int_eq(n, 8);
    ck_assert(t[7] == 35);
    n = cli_plot_ticks(3, 3, 5, t, 32, &step); /* an empty range: the one value */
    ck_assert_int_eq(n, 1);
    ck_assert(t[0] == 3);
}
END_TEST

START_TEST(nan_is_a_gap_not_a_zero) {
    double x[6] = {0, 1, 2, 3, 4, 5}, y[6] = {0.5, 0.6, NAN, 0.7, NAN, 0.9};
    cli_plot *p = cli_plot_new("t", "iteration", "rate", x, 6);
    ck_assert_ptr_nonnull(p);
    cli_plot_yrange(p, 0, 1);
    ck_assert_int_eq(cli_plot_line(p, "a", y, 2, 0), 0);
    char *svg = cli_plot_svg(p);
    ck_assert_ptr_nonnull(svg);
    ck_assert_int_eq(count(svg, "<polyline fill="), 1); /* 0-1 joined; 3 and 5 stand alone */
    ck_assert_int_eq(count(svg, "r=\"3.5\""), 2); /* the lone points are dots */
    ck_assert_int_eq(count(svg, ",320.00"), 0); /* nothing drawn at y = 0 */
    free(svg);
    cli_plot_free(p);
}
END_TEST

START_TEST(areas_stack) {
    double x[2] = {0, 1}, a[2] = {0.5, 0.5}, b[2] = {0.25, 0.25};
    cli_plot *p = cli_plot_new("t", "x", "y", x, 2);
    cli_plot_yrange(p, 0, 1);
    ck_assert_int_eq(cli_plot_area(p, "a", a), 0);
    ck_assert_int_eq(cli_plot_area(p, "b", b), 0);
    char *svg = cli_plot_svg(p);
    ck_assert_ptr_nonnull(svg);
    ck_assert_int_eq(count(svg, "<polygon"), 2);
    /* b's top is at 0.75 of the 278-pixel-high frame whose bottom is y = 320 */
    ck_assert_int_ge(count(svg, ",111.50"), 2);
    free(svg);
    cli_plot_free(p);
}
END_TEST

START_TEST(text_is_escaped_and_empty_plots_say_so) {
    double x[2] = {0, 1}, y[2] = {NAN, NAN};
    cli_plot *p = cli_plot_new("a <b> & \"c\"", "x", "y", x, 2);
    ck_assert_int_eq(cli_plot_line(p, "d&e", y, 0, 1), 0);
    char *svg = cli_plot_svg(p);
    ck_assert_ptr_nonnull(svg);
    ck_assert(strstr(svg, "a &lt;b&gt; &amp; &quot;c&quot;") != NULL);
    ck_assert(strstr(svg, "d&amp;e (no values)") != NULL);
    ck_assert(strstr(svg, "no values in this run") != NULL);
    ck_assert(strstr(svg, "<b>") == NULL);
    free(svg);
    cli_plot_free(p);
}
END_TEST

int main(void) {
    Suite *s = suite_create("report_svg");
    TCase *c = tcase_create("report_svg");
    tcase_add_test(c, ticks_are_round);
    tcase_add_test(c, nan_is_a_gap_not_a_zero);
    tcase_add_test(c, areas_stack);
    tcase_add_test(c, text_is_escaped_and_empty_plots_say_so);
    suite_add_tcase(s, c);
    return tu_run(s);
}
