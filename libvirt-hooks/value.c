// SPDX-License-Identifier: MIT
/*
 * The syntax of each value the metadata, the -device string and the
 * generator's options carry.  Everything here comes from untrusted text:
 * every length is bounded and every conversion checked for overflow.
 */
#include <string.h>
#include <unistd.h>

#include "geometry.h"
#include "hook.h"

#define XSTR(x)	STR(x)
#define STR(x)	#x

/* Set the reason of a refusal; returns -1. */
static int bad(const char **why, const char *text)
{
	*why = text;
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whether all of @s is ASCII letters, digits and characters of @extra. */
static int in_set(const char *s, const char *extra)
{
	for (; *s; s++) {
		if (!is_digit(*s) && !(*s >= 'a' && *s <= 'z') &&
		    !(*s >= 'A' && *s <= 'Z') && !strchr(extra, *s))
			return 0;
	}
	return 1;
}

/* Decimal digits, no sign, no leading zero; at most @max. */
static int parse_decimal(const char *s, const char **end, uint64_t max,
			 uint64_t *out, const char **why)
{
	uint64_t v = 0;
	const char *p = s;

	if (!is_digit(*p))
		return bad(why, "not a decimal number");
	if (p[0] == '0' && is_digit(p[1]))
		return bad(why, "a number with a leading zero");
	for (; is_digit(*p); p++) {
		unsigned int d = *p - '0';

		if (v > (max - d) / 10)
			return bad(why, "number out of range");
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return 0;
}

int value_u32(const char *s, uint32_t max, uint32_t *out, const char **why)
{
	const char *end;
	uint64_t v;

	if (parse_decimal(s, &end, max, &v, why))
		return -1;
	if (*end)
		return bad(why, "not a decimal number");
	*out = v;
	return 0;
}

int value_size(const char *s, uint64_t *out, const char **why)
{
	static const char suffixes[] = "KMGT";
	const char *end, *suf;
	unsigned int shift = 0;
	uint64_t v;

	if (parse_decimal(s, &end, UINT64_MAX, &v, why))
		return -1;
	if (*end) {
		char c = *end >= 'a' && *end <= 'z' ? *end - 'a' + 'A' : *end;

		suf = c ? strchr(suffixes, c) : NULL;
		if (!suf || end[1])
			return bad(why, "not a size (bytes, or a number with K, M, G or T)");
		shift = 10 * (suf - suffixes + 1);
		if (v > UINT64_MAX >> shift)
			return bad(why, "number out of range");
	}
	*out = v << shift;
	return 0;
}

int value_service(const char *s, const char **why)
{
	size_t n = strnlen(s, HOOK_SERVICE_MAX + 1);

	if (!n)
		return bad(why, "empty");
	if (n > HOOK_SERVICE_MAX)
		return bad(why, "longer than " XSTR(HOOK_SERVICE_MAX) " characters");
	if (!in_set(s, "_-"))
		return bad(why, "only letters, digits, '_' and '-' are allowed");
	return 0;
}

int value_path(const char *s, size_t max, const char **why)
{
	size_t n = strnlen(s, max + 1);
	const char *p;

	if (n > max)
		return bad(why, "path too long");
	if (s[0] != '/')
		return bad(why, "not an absolute path");
	if (n == 1)
		return bad(why, "the root directory");
	if (!in_set(s, "._+-/"))
		return bad(why, "only letters, digits, '.', '_', '+', '-' and '/' are allowed in a path");
	for (p = s; *p; ) {
		size_t len;

		p++;	/* the '/' */
		len = strcspn(p, "/");
		if (!len)
			return bad(why, "an empty path component ('//' or a trailing '/')");
		if ((len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.'))
			return bad(why, "a '.' or '..' path component");
		p += len;
	}
	return 0;
}

int value_onoff(const char *s, int *out, const char **why)
{
	if (!strcmp(s, "on"))
		*out = 1;
	else if (!strcmp(s, "off"))
		*out = 0;
	else
		return bad(why, "neither on nor off");
	return 0;
}

int value_qemu_bool(const char *s, int *out, const char **why)
{
	static const char *const yes[] = { "on", "yes", "true", "y" };
	static const char *const no[] = { "off", "no", "false", "n" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return bad(why, "not a bool (on or off)");
}

int value_uuid(const char *s, char out[HOOK_UUID_LEN + 1], const char **why)
{
	static const char hex[] = "0123456789abcdefABCDEF";

	if (strnlen(s, HOOK_UUID_LEN + 1) != HOOK_UUID_LEN)
		return bad(why, "not a UUID");
	for (int i = 0; i < HOOK_UUID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !strchr(hex, s[i]))
			return bad(why, "not a UUID");
		out[i] = s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i];
	}
	out[HOOK_UUID_LEN] = '\0';
	return 0;
}

int value_geometry(uint64_t size, uint32_t reducers, const char **why)
{
	struct sivshm_geometry geo;
	long page = sysconf(_SC_PAGESIZE);

	if (page <= 0)
		page = 4096;
	if (size > SIVSHM_MAX_REGION)
		return bad(why, "above the largest region, SIVSHM_MAX_REGION");
	if (sivshm_geometry_init(&geo, size, reducers, page))
		return bad(why, "too small for one slot of at least a page per VM");
	return 0;
}
