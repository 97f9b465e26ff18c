// SPDX-License-Identifier: MIT
#include <stdio.h>

#include "log.h"
#include "sivshm.h"

static sivshm_logger logger;

void sivshm_set_logger(sivshm_logger fn)
{
	logger = fn;
}

void sivshm_vlog(const char *fmt, va_list ap)
{
	char buf[512];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (logger)
		logger(buf);
	else
		fprintf(stderr, "libsivshm: %s\n", buf);
}

void sivshm_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sivshm_vlog(fmt, ap);
	va_end(ap);
}
