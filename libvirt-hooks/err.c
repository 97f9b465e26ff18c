// SPDX-License-Identifier: MIT
/*
 * Refusals: libvirt shows a hook's stderr in the error of `virsh start`, so
 * each one is a single line, whatever bytes the domain XML put in it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hook.h"

int hook_fail(struct hook_err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void hook_print(const char *prog, const struct hook_err *e)
{
	char line[4 * HOOK_MSG_MAX];
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)e->msg; *p; p++) {
		if (*p >= 0x20 && *p < 0x7f)
			line[n++] = *p;
		else
			n += snprintf(line + n, 5, "\\x%02x", *p);
	}
	line[n] = '\0';
	fprintf(stderr, "%s: %s\n", prog, line);
}
