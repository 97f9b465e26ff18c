// SPDX-License-Identifier: MIT
/*
 * The user and group libvirt runs QEMU as: `user = "..."` and `group =
 * "..."` of qemu.conf, in libvirt's conf syntax (virconf.c): NAME = VALUE
 * statements ended by a newline or ';', '#' comments, values that are
 * strings ('...', "..." or """..."""), numbers or [ lists ] that may span
 * lines.  The first statement of a name counts, as virConfGetValue() finds
 * it.  A name is looked up as a user (group) first, then read as an id;
 * "+N" is always an id.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qemuconf.h"

struct cur {
	const char *p, *end;
	int line;
	struct hook_err *e;
};

static int bad(struct cur *c, const char *what)
{
	return hook_fail(c->e, "qemu.conf, line %d: %s", c->line, what);
}

static int more(const struct cur *c)
{
	return c->p < c->end;
}

/* Skip spaces and tabs, and with @nl also newlines and comments. */
static void skip(struct cur *c, int nl)
{
	while (more(c)) {
		if (*c->p == ' ' || *c->p == '\t' || *c->p == '\r') {
			c->p++;
		} else if (*c->p == '#') {
			while (more(c) && *c->p != '\n')
				c->p++;
		} else if (nl && *c->p == '\n') {
			c->line++;
			c->p++;
		} else {
			break;
		}
	}
}

/* A string value; its text is [*@s, *@s + *@n). */
static int parse_string(struct cur *c, const char **s, size_t *n)
{
	const char *close;
	char q = *c->p;

	if (c->end - c->p >= 3 && !memcmp(c->p, "\"\"\"", 3)) {
		c->p += 3;
		close = memmem(c->p, c->end - c->p, "\"\"\"", 3);
		if (!close)
			return bad(c, "unterminated \"\"\" string");
		*s = c->p;
		*n = close - c->p;
		for (const char *p = c->p; p < close; p++)
			c->line += *p == '\n';
		c->p = close + 3;
		return 0;
	}
	c->p++;
	*s = c->p;
	while (more(c) && *c->p != q && *c->p != '\n')
		c->p++;
	if (!more(c) || *c->p != q)
		return bad(c, "unterminated string");
	*n = c->p - *s;
	c->p++;
	return 0;
}

static int parse_value(struct cur *c, const char **s, size_t *n, int depth);

static int parse_list(struct cur *c, int depth)
{
	const char *s;
	size_t n;

	if (depth > 8)
		return bad(c, "lists nested too deep");
	c->p++;		/* '[' */
	for (;;) {
		skip(c, 1);
		if (!more(c))
			return bad(c, "unterminated list");
		if (*c->p == ']') {
			c->p++;
			return 0;
		}
		if (parse_value(c, &s, &n, depth + 1))
			return -1;
		skip(c, 1);
		if (more(c) && *c->p == ',')
			c->p++;
		else if (!more(c) || *c->p != ']')
			return bad(c, "expected ',' or ']' in a list");
	}
}

/* A value; @s is NULL unless it is a string. */
static int parse_value(struct cur *c, const char **s, size_t *n, int depth)
{
	*s = NULL;
	if (!more(c))
		return bad(c, "expected a value");
	if (*c->p == '"' || *c->p == '\'')
		return parse_string(c, s, n);
	if (*c->p == '[')
		return parse_list(c, depth);
	if (*c->p == '-')
		c->p++;
	if (!more(c) || *c->p < '0' || *c->p > '9')
		return bad(c, "expected a string, a number or a list");
	while (more(c) && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return 0;
}

static int name_char(char ch, int first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       ch == '_' || (!first && ((ch >= '0' && ch <= '9') ||
				       ch == '.' || ch == '-'));
}

/* Keep the first string given to @key in @out (HOOK_FIELD_MAX + 1). */
static int keep(struct cur *c, const char *key, size_t klen, const char *want,
		const char *s, size_t n, char *out)
{
	if (klen != strlen(want) || memcmp(key, want, klen) || out[0])
		return 0;
	if (!s)
		return bad(c, "user and group must be strings");
	if (!n || n > HOOK_FIELD_MAX || memchr(s, '\0', n))
		return bad(c, "user or group is empty or too long");
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int statement(struct cur *c, char *user, char *group)
{
	const char *key = c->p, *s;
	size_t klen, n;

	if (!name_char(*c->p, 1))
		return bad(c, "expected a setting name");
	while (more(c) && name_char(*c->p, 0))
		c->p++;
	klen = c->p - key;
	skip(c, 0);
	if (!more(c) || *c->p != '=')
		return bad(c, "expected '='");
	c->p++;
	skip(c, 0);
	if (parse_value(c, &s, &n, 0) ||
	    keep(c, key, klen, "user", s, n, user) ||
	    keep(c, key, klen, "group", s, n, group))
		return -1;
	skip(c, 0);
	if (more(c) && *c->p == ';')
		c->p++;		/* another statement may follow */
	else if (more(c) && *c->p != '\n')
		return bad(c, "expected ';' or the end of the line");
	return 0;
}

int qconf_parse(const char *buf, size_t len, char *user, char *group,
		struct hook_err *e)
{
	struct cur c = { buf, buf + len, 1, e };

	user[0] = '\0';
	group[0] = '\0';
	for (;;) {
		skip(&c, 1);
		if (!more(&c))
			return 0;
		if (statement(&c, user, group))
			return -1;
	}
}

/* "+N", or a name that is no user (group) but a number: an id. */
static int id_of(const char *s, uint32_t *id)
{
	const char *why;

	return value_u32(s + (s[0] == '+'), UINT32_MAX - 1, id, &why);
}

static int resolve(const char *user, const char *group, uid_t *uid,
		   gid_t *gid, struct hook_err *e)
{
	struct passwd *pw = NULL;
	struct group *gr = NULL;
	uint32_t id;

	if (user[0] != '+')
		pw = getpwnam(user);
	if (pw)
		*uid = pw->pw_uid;
	else if (!id_of(user, &id))
		*uid = id;
	else
		return hook_fail(e, "qemu.conf: user %s does not exist", user);
	if (group[0] != '+')
		gr = getgrnam(group);
	if (gr)
		*gid = gr->gr_gid;
	else if (!id_of(group, &id))
		*gid = id;
	else
		return hook_fail(e, "qemu.conf: group %s does not exist", group);
	return 0;
}

/* Read all of @path (at most HOOK_CONF_MAX bytes) into a new buffer. */
static int slurp(const char *path, char **buf, size_t *len,
		 struct hook_err *e)
{
	struct stat st;
	ssize_t n;
	int fd;

	*buf = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return hook_fail(e, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > HOOK_CONF_MAX) {
		close(fd);
		return hook_fail(e, "%s is not a regular file of at most %d bytes",
				 path, HOOK_CONF_MAX);
	}
	*buf = malloc(st.st_size + 1);
	if (!*buf) {
		close(fd);
		return hook_fail(e, "out of memory");
	}
	*len = 0;
	for (;;) {
		n = read(fd, *buf + *len, st.st_size + 1 - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += n;
		if (*len > (size_t)st.st_size)
			break;		/* it grew while we read it */
	}
	close(fd);
	if (n != 0) {
		free(*buf);
		*buf = NULL;
		return hook_fail(e, "cannot read %s", path);
	}
	return 0;
}

int qconf_owner(const char *path, uid_t *uid, gid_t *gid,
		struct hook_err *e)
{
	char user[HOOK_FIELD_MAX + 1], group[HOOK_FIELD_MAX + 1];
	size_t len = 0;
	char *buf;
	int err = 0;

	if (slurp(path, &buf, &len, e))
		return -1;
	user[0] = '\0';
	group[0] = '\0';
	if (buf)
		err = qconf_parse(buf, len, user, group, e);
	free(buf);
	if (err)
		return -1;
	if (!user[0])
		strcpy(user, HOOK_QEMU_USER);
	if (!group[0])
		strcpy(group, HOOK_QEMU_GROUP);
	return resolve(user, group, uid, gid, e);
}
