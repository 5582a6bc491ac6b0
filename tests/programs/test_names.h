/* Names of NCCL types, operators and results as they appear in journals and traces.  The test
 * programs keep their own table, independent of the library's, so that the two can be compared. */
#ifndef NPKIT_TEST_NAMES_H
#define NPKIT_TEST_NAMES_H

#include <stddef.h>

/* "float32", ...; "?" for a value NCCL does not define. */
const char *npkit_test_dtype_name(int datatype);
/* Bytes per element, 0 for an unknown type. */
size_t npkit_test_dtype_size(int datatype);
/* 1 for float16/32/64 and bfloat16. */
int npkit_test_dtype_is_float(int datatype);
/* 1 for the unsigned integer types. */
int npkit_test_dtype_is_unsigned(int datatype);
/* "sum", "prod", "max", "min", "avg"; "premulsum" for operators created at run time. */
const char *npkit_test_op_name(int op);
/* "ncclSuccess", ...; "?" for a value NCCL does not define. */
const char *npkit_test_result_name(int result);

#endif
