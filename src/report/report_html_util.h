/*
 * Table cells and header rows shared by the sections of the HTML report (report_html*.c): text is
 * always escaped, durations and sizes use the report's own formats (report_model.h).
 */
#ifndef NPKIT_REPORT_HTML_UTIL_H
#define NPKIT_REPORT_HTML_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* <td>text</td>; left-aligned (class "l") when left is set. */
void npkit_html_td(FILE *o, int left, const char *text);
void npkit_html_td_u64(FILE *o, uint64_t v);
/* A duration in ns as "12.3 us"; NaN gives "-". */
void npkit_html_td_dur(FILE *o, double ns);
/* A bandwidth in GB/s with three decimals; NaN gives "-". */
void npkit_html_td_gbs(FILE *o, double gbs);
/* Opens <section id="ID"><h2>TITLE</h2>.  A section that needs an input the logs lack (have == 0)
 * gets its paragraph <p class="needs-WHAT">HTML</p> and is closed at once.  Returns have: whether
 * the caller goes on to fill the section.  html is written as it is: the callers' own markup. */
int npkit_html_section(FILE *o, const char *id, const char *title, int have, const char *what, const char *html);
/* <tr><th>..</th>...</tr>, the first column left-aligned. */
void npkit_html_head_row(FILE *o, const char *const *cols, size_t n);

#define NPKIT_HTML_HEAD(o, ...)                                          \
  do {                                                                   \
    static const char *const cols_[] = {__VA_ARGS__};                    \
    npkit_html_head_row((o), cols_, sizeof(cols_) / sizeof(cols_[0]));   \
  } while (0)

#endif /* NPKIT_REPORT_HTML_UTIL_H */
