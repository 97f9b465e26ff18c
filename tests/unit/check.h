/* SPDX-License-Identifier: MIT */
/*
 * The assertions of every C test in the tree: the host unit tests
 * (tests/unit/), the programs that run inside test guests (tests/vm/guest/)
 * and the KVM test programs (tests/vm/kvm/).
 *
 * A failure prints one line to stderr,
 *
 *	ASSERT file:line: expression: message (errno N text)
 *
 * the errno part only if errno is set, and exits 1.  From a guest the line
 * reaches the host in the test's output, where the harness reports the
 * first one as the failure (KVM selftests' GUEST_ASSERT pattern).  T_SKIP
 * prints "SKIP: reason" to stdout and exits 77, automake's skip.
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void __attribute__((noreturn, format(printf, 5, 6)))
t_fail(const char *file, int line, const char *expr, int err,
       const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ASSERT %s:%d: %s", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, " (errno %d %s)", err, strerror(err));
	fprintf(stderr, "\n");
	exit(1);
}

/* T_ASSERT(cond) or T_ASSERT(cond, "format", args...) */
#define T_ASSERT(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			int _e = errno;						\
										\
			t_fail(__FILE__, __LINE__, #cond, _e, ": " __VA_ARGS__);\
		}								\
	} while (0)

/* Two integers (or pointers) equal, as 64-bit values. */
#define T_EQ(a, b)								\
	do {									\
		unsigned long long _a = (unsigned long long)(a);		\
		unsigned long long _b = (unsigned long long)(b);		\
		int _e = errno;							\
										\
		if (_a != _b)							\
			t_fail(__FILE__, __LINE__, #a " == " #b, _e,		\
			       ": %lld (%#llx) != %lld (%#llx)",		\
			       (long long)_a, _a, (long long)_b, _b);		\
	} while (0)

#define T_SKIP(...)								\
	do {									\
		printf("SKIP: " __VA_ARGS__);					\
		printf("\n");							\
		exit(77);							\
	} while (0)

#endif
