/* SPDX-License-Identifier: MIT */
#ifndef SIVSHM_LOG_H
#define SIVSHM_LOG_H

#include <stdarg.h>

/* libsivshm's diagnostics: to stderr, or to sivshm_set_logger()'s function. */
void sivshm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sivshm_vlog(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

#endif
