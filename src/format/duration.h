/* Durations typed by a user (command-line options of report and merge). */
#ifndef NPKIT_DURATION_H
#define NPKIT_DURATION_H

/* Parses a duration such as "5us", "2.5ms", "1s", "300ns"; a bare number is in default_unit
 * ("ns", "us", "ms" or "s").  Returns 0 and sets *ns, or -1 if s is not a duration. */
int npkit_parse_duration(const char *s, const char *default_unit, double *ns);

#endif /* NPKIT_DURATION_H */
