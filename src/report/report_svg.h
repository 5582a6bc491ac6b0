/*
 * Inline SVG charts for the HTML report, written as text: a line chart (log-2 x axis for message
 * sizes) and a bar chart.  No script: tooltips are SVG <title> elements.
 */
#ifndef NPKIT_REPORT_SVG_H
#define NPKIT_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

typedef struct npkit_svg_series {
  const char *name;
  const double *x, *y;   /* x > 0 when the axis is logarithmic */
  const int *flag;       /* points drawn as flagged (may be NULL) */
  size_t n;
} npkit_svg_series;

/* Writes text with &, <, >, " and ' escaped. */
void npkit_html_escape(FILE *o, const char *s);

/* x_bytes: the x axis is message size on a log-2 scale with byte labels. */
void npkit_svg_lines(FILE *o, const char *id, const char *title, const char *x_label, const char *y_label,
                     const npkit_svg_series *s, size_t n_series, int x_bytes);

/* One bar per label; highlighted bars are drawn in the warning colour. */
void npkit_svg_bars(FILE *o, const char *id, const char *title, const char *y_label, const char *const *labels,
                    const double *values, const int *highlight, size_t n);

#endif /* NPKIT_REPORT_SVG_H */
