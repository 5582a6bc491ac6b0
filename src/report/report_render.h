/*
 * The three views of a finished report: readable text, JSON (the schema is in docs/report.md) and a
 * self-contained HTML page (inline CSS and SVG plots, no script, nothing fetched from a network).
 * They only read the report (quantiles may sort their samples on first use).
 */
#ifndef NPKIT_REPORT_RENDER_H
#define NPKIT_REPORT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "report_model.h"

#define NPKIT_REPORT_JSON_VERSION 1

/* Text and HTML return 0, or -1 if writing failed (errno set by stdio). */
int npkit_report_text(npkit_report *rep, FILE *out);
int npkit_report_html(npkit_report *rep, FILE *out);
/* JSON goes straight to a file descriptor through the streaming JSON writer; 0, or -1 with a message. */
int npkit_report_json(npkit_report *rep, int fd, char *err, size_t errlen);

#endif /* NPKIT_REPORT_RENDER_H */
