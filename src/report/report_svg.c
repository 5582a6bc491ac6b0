#include "report_svg.h"

#include <math.h>
#include <stdint.h>

#include "report_model.h"

#define W 680.0
#define H 300.0
#define ML 64.0  /* margins: room for the axis labels */
#define MR 16.0
#define MT 28.0
#define MB 48.0

static const char *const palette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                                      "#7f7f7f"};
#define FLAG_COLOUR "#d62728"

void npkit_html_escape(FILE *o, const char *s) {
  for (; s != NULL && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", o); break;
    case '<': fputs("&lt;", o); break;
    case '>': fputs("&gt;", o); break;
    case '"': fputs("&quot;", o); break;
    case '\'': fputs("&#39;", o); break;
    default: fputc(*s, o);
    }
  }
}

/* A round step (1, 2 or 5 × 10^k) that cuts [0, max] into about `parts` pieces. */
static double nice_step(double max, int parts) {
  if (!(max > 0)) return 1;
  double raw = max / parts, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void begin(FILE *o, const char *id, const char *title) {
  fprintf(o, "<svg class=\"plot\" id=\"");
  npkit_html_escape(o, id);
  fprintf(o, "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
             "role=\"img\">\n<title>", W, H, W, H);
  npkit_html_escape(o, title);
  fprintf(o, "</title>\n<text x=\"%.0f\" y=\"18\" class=\"ptitle\">", ML);
  npkit_html_escape(o, title);
  fprintf(o, "</text>\n");
}

/* Horizontal grid and y labels from 0 to ymax; returns the top of the scale. */
static double y_axis(FILE *o, double ymax, const char *label) {
  double step = nice_step(ymax, 5), top = step * ceil(ymax / step);
  if (!(top > 0)) top = 1;
  for (double v = 0; v <= top * 1.0001; v += step) {
    double y = H - MB - (v / top) * (H - MT - MB);
    fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"ytick\">%.4g</text>\n", ML, y, W - MR, y, ML - 6, y + 4, v);
  }
  fprintf(o, "<text transform=\"translate(14 %.1f) rotate(-90)\" class=\"alabel\">", (H - MB + MT) / 2);
  npkit_html_escape(o, label);
  fprintf(o, "</text>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>\n", ML, H - MB, W - MR,
          H - MB);
  return top;
}

void npkit_svg_lines(FILE *o, const char *id, const char *title, const char *x_label, const char *y_label,
                     const npkit_svg_series *s, size_t n_series, int x_bytes) {
  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  for (size_t k = 0; k < n_series; k++)
    for (size_t i = 0; i < s[k].n; i++) {
      double x = x_bytes ? log2(s[k].x[i]) : s[k].x[i];
      if (!isfinite(x) || !isfinite(s[k].y[i])) continue;
      if (x < xmin) xmin = x;
      if (x > xmax) xmax = x;
      if (s[k].y[i] > ymax) ymax = s[k].y[i];
    }
  begin(o, id, title);
  if (!isfinite(xmin)) {
    fprintf(o, "<text x=\"%.0f\" y=\"%.0f\">no data</text>\n</svg>\n", W / 2, H / 2);
    return;
  }
  if (xmax - xmin < 1) {
    xmin -= 0.5;
    xmax += 0.5;
  }
  double top = y_axis(o, ymax, y_label);
#define PX(x) (ML + ((x) - xmin) / (xmax - xmin) * (W - ML - MR))
#define PY(y) (H - MB - (y) / top * (H - MT - MB))
  /* x ticks: powers of two, thinned to at most about ten labels */
  double span = xmax - xmin, every = span > 10 ? ceil(span / 10) : 1;
  for (double e = ceil(xmin); e <= xmax; e += every) {
    char lab[32];
    /* 2^64 (a size of 2^64-1 bytes rounds up there) does not convert to an integer */
    if (x_bytes) npkit_report_bytes(e >= 64 ? UINT64_MAX : (uint64_t)ldexp(1.0, (int)e), lab, sizeof(lab));
    else snprintf(lab, sizeof(lab), "%.4g", e);
    fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" class=\"xtick\">%s</text>\n",
            PX(e), H - MB, PX(e), H - MB + 4, PX(e), H - MB + 18, lab);
  }
  fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" class=\"alabel\">", (ML + W - MR) / 2, H - 8);
  npkit_html_escape(o, x_label);
  fprintf(o, "</text>\n");
  for (size_t k = 0; k < n_series; k++) {
    const char *colour = palette[k % (sizeof(palette) / sizeof(palette[0]))];
    fprintf(o, "<g class=\"series\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
    for (size_t i = 0; i < s[k].n; i++) {
      double x = x_bytes ? log2(s[k].x[i]) : s[k].x[i];
      if (isfinite(x) && isfinite(s[k].y[i])) fprintf(o, "%.1f,%.1f ", PX(x), PY(s[k].y[i]));
    }
    fprintf(o, "\"/>\n");
    for (size_t i = 0; i < s[k].n; i++) {
      double x = x_bytes ? log2(s[k].x[i]) : s[k].x[i];
      if (!isfinite(x) || !isfinite(s[k].y[i])) continue;
      int flag = s[k].flag != NULL && s[k].flag[i];
      char lab[32];
      if (x_bytes) npkit_report_bytes((uint64_t)s[k].x[i], lab, sizeof(lab));
      else snprintf(lab, sizeof(lab), "%.4g", s[k].x[i]);
      fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\" class=\"%s\"><title>", PX(x), PY(s[k].y[i]),
              flag ? 5 : 3, flag ? FLAG_COLOUR : colour, flag ? "point flagged" : "point");
      npkit_html_escape(o, s[k].name);
      fprintf(o, ": %s, %.4g%s</title></circle>\n", lab, s[k].y[i], flag ? " (bandwidth bottleneck)" : "");
    }
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" class=\"legend\">", W - MR - 4, MT + 14.0 * (double)k, colour);
    npkit_html_escape(o, s[k].name);
    fprintf(o, "</text></g>\n");
  }
#undef PX
#undef PY
  fprintf(o, "</svg>\n");
}

void npkit_svg_bars(FILE *o, const char *id, const char *title, const char *y_label, const char *const *labels,
                    const double *values, const int *highlight, size_t n) {
  double ymax = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(values[i]) && values[i] > ymax) ymax = values[i];
  begin(o, id, title);
  double top = y_axis(o, ymax, y_label);
  double slot = n ? (W - ML - MR) / (double)n : 0, bw = slot * 0.7;
  size_t every = n > 32 ? (n + 31) / 32 : 1;
  for (size_t i = 0; i < n; i++) {
    double v = isfinite(values[i]) && values[i] > 0 ? values[i] : 0;
    double h = v / top * (H - MT - MB), x = ML + slot * (double)i + (slot - bw) / 2;
    int hi = highlight != NULL && highlight[i];
    fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" class=\"%s\"><title>", x,
            H - MB - h, bw, h, hi ? FLAG_COLOUR : palette[0], hi ? "bar flagged" : "bar");
    npkit_html_escape(o, labels[i]);
    fprintf(o, ": %.4g</title></rect>\n", values[i]);
    if (i % every == 0) {
      fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" class=\"xtick\">", x + bw / 2, H - MB + 18);
      npkit_html_escape(o, labels[i]);
      fprintf(o, "</text>\n");
    }
  }
  fprintf(o, "</svg>\n");
}
