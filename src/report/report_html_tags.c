/* The "By user tag" section of the HTML report (report_tags.h; the text view prints the same). */
#include <inttypes.h>
#include <math.h>

#include "report_html_util.h"
#include "report_model.h"

void npkit_report_html_tags(const npkit_report *rep, FILE *o) {
  if (rep->n_tags == 0) return;
  char tag[24], ops[96], sz[32], share[16];
  fputs("<section id=\"user-tags-section\"><h2>By user tag</h2>\n"
        "<p class=\"note\">Calls grouped by the <code>userProfilerTag</code> of their <code>nccl*Config</code> "
        "call (NCCL 2.31): time summed over the calls and ranks, and its share of the time of every call.</p>\n"
        "<table id=\"user-tags\">",
        o);
  NPKIT_HTML_HEAD(o, "tag", "operations", "calls", "timed", "bytes", "time", "share", "time source");
  for (size_t i = 0; i < rep->n_tags; i++) {
    const npkit_tag_sum *s = &rep->tags[i];
    npkit_tag_string(s->tag, tag, sizeof tag);
    npkit_tag_ops_string(s, ops, sizeof ops);
    npkit_report_bytes(s->bytes, sz, sizeof sz);
    if (isnan(s->share))
      snprintf(share, sizeof share, "-");
    else
      snprintf(share, sizeof share, "%.1f %%", 100.0 * s->share);
    fprintf(o, "<tr data-tag=\"%s\">", tag);
    npkit_html_td(o, 1, tag);
    npkit_html_td(o, 1, ops);
    npkit_html_td_u64(o, s->calls);
    npkit_html_td_u64(o, s->timed);
    npkit_html_td(o, 0, sz);
    npkit_html_td_dur(o, s->time_ns);
    npkit_html_td(o, 0, share);
    npkit_html_td(o, 0, npkit_time_source_name(s->source));
    fputs("</tr>\n", o);
  }
  fputs("</table></section>\n", o);
}
