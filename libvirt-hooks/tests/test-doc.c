// SPDX-License-Identifier: MIT
/*
 * Every number and name docs/libvirt.md and the man pages of libvirt-hooks/
 * state for the hook's constants is the one in hook.h.  A constant is
 * stated as `NAME (value)` or `NAME = value` (markdown and man page markup
 * stripped; a value may be 0x10, 4194304, 4 MiB, a string, or a file mode
 * as "mode 0770"), the way tests/unit/doc-constants.py reads the project's
 * other docs, which also reads docs/libvirt.md.  Each of
 * the hook's constants is stated in docs/libvirt.md at least once, so the
 * doc cannot fall silent on one either.
 */
#include <ctype.h>
#include <glob.h>

#include "check.h"
#include "hook.h"

#define N(x)	{ #x, (unsigned long long)(x), NULL, 1, 0 }
#define S(x)	{ #x, 0, x, 1, 0 }
#define P(x)	{ #x, (unsigned long long)(x), NULL, 0, 0 }	/* libsivshm's */

static struct constant {
	const char *name;
	unsigned long long value;
	const char *text;		/* a string constant */
	int ours;			/* must be stated in docs/libvirt.md */
	int stated;
} constants[] = {
	N(HOOK_XML_MAX), N(HOOK_NAME_MAX), N(HOOK_FIELD_MAX),
	N(HOOK_SERVICE_MAX), N(HOOK_SOCKET_MAX), N(HOOK_PATH_MAX),
	N(HOOK_DEVARG_MAX), N(HOOK_UUID_LEN), N(HOOK_CONF_MAX),
	N(HOOK_LEASE_MAX), N(HOOK_LOCK_WAIT_MS), N(HOOK_DIR_MODE),
	N(GEN_MEMORY_MIB), N(GEN_MEMORY_MAX_MIB), N(GEN_VCPUS_MAX),
	N(GEN_APPEND_MAX), N(GEN_PCI_SLOT),
	S(HOOK_NS), S(HOOK_NS_PREFIX), S(HOOK_ELEMENT), S(HOOK_QEMU_NS),
	S(HOOK_QEMU_CONF), S(HOOK_QEMU_USER), S(HOOK_QEMU_GROUP),
	S(HOOK_STATE_DIR), S(HOOK_ENV_QEMU_CONF), S(HOOK_ENV_STATE_DIR),
	S(GEN_EMULATOR), S(GEN_SOCKET_DIR),
	P(SIVSHM_MAX_REDUCERS), P(SIVSHM_MAX_VECTORS), P(SIVSHM_MAX_REGION),
};

#define NCONST	ARRAY_SIZE(constants)

/* @line without markdown and man page markup, into @out. */
static void plain(const char *line, char *out, size_t len)
{
	size_t n = 0;

	if (line[0] == '.' && isupper((unsigned char)line[1])) {
		line = strchr(line, ' ');	/* .B, .BR, .IR ... */
		line = line ? line + 1 : "";
	}
	while (*line && n + 1 < len) {
		if (*line == '`' || !strncmp(line, "**", 2)) {
			line += *line == '`' ? 1 : 2;
		} else if (line[0] == '\\' && line[1] == 'f' && line[2]) {
			line += 3;
		} else if (line[0] == '\\' && line[1] == '-') {
			out[n++] = '-';
			line += 2;
		} else {
			out[n++] = *line++;
		}
	}
	out[n] = '\0';
}

/* A number at @p: 0x10, 0770, 4194304, 4 MiB, 2^40.  0 if none. */
static int number(const char *p, unsigned long long *v)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	char *end;

	if (!isdigit((unsigned char)*p))
		return 0;
	*v = strtoull(p, &end, p[0] == '0' && p[1] == 'x' ? 16 :
		      p[0] == '0' ? 8 : 10);
	if (*end == '^') {
		unsigned long long e = strtoull(end + 1, &end, 10), b = *v;

		for (*v = 1; e--; )
			*v *= b;
	}
	while (*end == ' ')
		end++;
	for (int i = 0; i < 4; i++) {
		if (!strncmp(end, units[i], 3))
			*v <<= 10 * (i + 1);
	}
	return 1;
}

/* Check each statement in @text (one line and the next); count errors. */
static int check_text(const char *path, int lineno, const char *text,
		      size_t first_len)
{
	int bad = 0;

	for (size_t i = 0; i < NCONST; i++) {
		struct constant *c = &constants[i];
		size_t nl = strlen(c->name);
		const char *p = text;

		while ((p = strstr(p, c->name)) && (size_t)(p - text) < first_len) {
			const char *v = p + nl;
			unsigned long long got;
			int word = (p == text || !(isalnum((unsigned char)p[-1]) ||
						   p[-1] == '_')) &&
				   !(isalnum((unsigned char)*v) || *v == '_');

			p = v;
			if (!word)
				continue;
			while (*v == ' ')
				v++;
			if (*v != '(' && *v != '=')
				continue;
			v++;
			while (*v == ' ' || *v == '"' || *v == '\'')
				v++;
			/* "(mode 0770)": doc-constants.py cannot read 0770. */
			if (!strncmp(v, "mode ", 5))
				v += 5;
			if (c->text) {
				size_t tl = strlen(c->text);

				c->stated |= !strcmp(path, "docs/libvirt.md");
				if (strncmp(v, c->text, tl) || !strchr("\"') ,;", v[tl])) {
					fprintf(stderr, "%s:%d: %s stated as '%.40s', the code says '%s'\n",
						path, lineno, c->name, v, c->text);
					bad++;
				}
			} else if (number(v, &got)) {
				c->stated |= !strcmp(path, "docs/libvirt.md");
				if (got != c->value) {
					fprintf(stderr, "%s:%d: %s stated as %llu, the code says %llu\n",
						path, lineno, c->name, got, c->value);
					bad++;
				}
			}
		}
	}
	return bad;
}

static int check_file(const char *src, const char *rel)
{
	char path[512], line[2][1024], both[2048];
	int lineno = 0, bad = 0, have;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", src, rel);
	f = fopen(path, "r");
	T_ASSERT(f, "cannot open %s", path);
	have = !!fgets(line[0], sizeof(line[0]), f);
	while (have) {
		int next = !!fgets(line[1], sizeof(line[1]), f);
		char a[1024], b[1024];

		lineno++;
		line[0][strcspn(line[0], "\n")] = '\0';
		plain(line[0], a, sizeof(a));
		if (next) {
			line[1][strcspn(line[1], "\n")] = '\0';
			plain(line[1], b, sizeof(b));
		} else {
			b[0] = '\0';
		}
		snprintf(both, sizeof(both), "%s %s", a, b);
		bad += check_text(rel, lineno, both, strlen(a));
		memcpy(line[0], line[1], sizeof(line[0]));
		have = next;
	}
	fclose(f);
	return bad;
}

int main(void)
{
	const char *src = HOOK_SRCDIR;
	char pattern[512];
	int bad = 0;
	glob_t g;

	bad += check_file(src, "docs/libvirt.md");
	snprintf(pattern, sizeof(pattern), "%s/libvirt-hooks/man/*.[18]", src);
	T_EQ(glob(pattern, 0, NULL, &g), 0);
	T_ASSERT(g.gl_pathc == 2, "%zu man pages", g.gl_pathc);
	for (size_t i = 0; i < g.gl_pathc; i++)
		bad += check_file(src, g.gl_pathv[i] + strlen(src) + 1);
	globfree(&g);
	for (size_t i = 0; i < NCONST; i++) {
		if (constants[i].ours && !constants[i].stated) {
			fprintf(stderr, "docs/libvirt.md never states %s\n",
				constants[i].name);
			bad++;
		}
	}
	printf("%d wrong statements\n", bad);
	return bad ? 1 : 0;
}
