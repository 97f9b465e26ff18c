/* SPDX-License-Identifier: MIT */
/*
 * Assertions for host unit tests: a failure prints file:line and the
 * expression, and exits 1.  T_SKIP exits 77 with a reason.
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_ASSERT(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "ASSERT %s:%d: %s", __FILE__,		\
				__LINE__, #cond);				\
			fprintf(stderr, ": " __VA_ARGS__);			\
			fprintf(stderr, "\n");					\
			exit(1);						\
		}								\
	} while (0)

#define T_EQ(a, b)								\
	do {									\
		long long _a = (long long)(a), _b = (long long)(b);		\
		if (_a != _b) {							\
			fprintf(stderr, "ASSERT %s:%d: %s == %s: %lld != %lld\n",\
				__FILE__, __LINE__, #a, #b, _a, _b);		\
			exit(1);						\
		}								\
	} while (0)

#define T_SKIP(...)								\
	do {									\
		printf("SKIP: " __VA_ARGS__);					\
		printf("\n");							\
		exit(77);							\
	} while (0)

#endif
