#include "report_html_util.h"

#include <inttypes.h>
#include <math.h>

#include "report_model.h"
#include "report_svg.h"

void npkit_html_td(FILE *o, int left, const char *text) {
  fputs(left ? "<td class=\"l\">" : "<td>", o);
  npkit_html_escape(o, text);
  fputs("</td>", o);
}

int npkit_html_section(FILE *o, const char *id, const char *title, int have, const char *what, const char *html) {
  fprintf(o, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
  if (!have) fprintf(o, "<p class=\"needs-%s\">%s</p></section>\n", what, html);
  return have;
}

void npkit_html_td_u64(FILE *o, uint64_t v) {
  fprintf(o, "<td>%" PRIu64 "</td>", v);
}

void npkit_html_td_dur(FILE *o, double ns) {
  char b[32];
  npkit_report_duration(ns, b, sizeof(b));
  npkit_html_td(o, 0, b);
}

void npkit_html_td_gbs(FILE *o, double v) {
  if (isnan(v)) fputs("<td>-</td>", o);
  else fprintf(o, "<td>%.3f</td>", v);
}

void npkit_html_head_row(FILE *o, const char *const *cols, size_t n) {
  fputs("<tr>", o);
  for (size_t i = 0; i < n; i++) {
    fputs(i == 0 ? "<th class=\"l\">" : "<th>", o);
    npkit_html_escape(o, cols[i]);
    fputs("</th>", o);
  }
  fputs("</tr>\n", o);
}
