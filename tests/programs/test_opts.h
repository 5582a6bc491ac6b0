/* Strict parsing of numeric command line values for the test programs. */
#ifndef NPKIT_TEST_OPTS_H
#define NPKIT_TEST_OPTS_H

/* Parses a whole decimal string within [min, max]; 0 on success, -1 (with a message on stderr
 * naming `what`) otherwise. */
int npkit_test_parse_long(const char *what, const char *text, long min, long max, long *out);

#endif
