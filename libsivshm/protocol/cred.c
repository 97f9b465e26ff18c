// SPDX-License-Identifier: MIT
/*
 * Peer credentials: who may take a reducer id, and who may be the mapper,
 * from SO_PEERCRED and from the "UID:GID" texts that configure them.
 */
#include <errno.h>
#include <sys/socket.h>

#include "cred.h"

#define BAD(err, text)			\
	do {				\
		*why = text;		\
		return err;		\
	} while (0)

int proto_cred_get(int sock, struct proto_cred *got)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	got->uid = uc.uid;
	got->gid = uc.gid;
	return 0;
}

int proto_cred_allows(const struct proto_cred *want,
		      const struct proto_cred *got)
{
	return (want->uid == PROTO_CRED_ANY || want->uid == got->uid) &&
	       (want->gid == PROTO_CRED_ANY || want->gid == got->gid);
}

/* One field: "*" or a decimal below PROTO_CRED_ANY; *@end past it. */
static int cred_field(const char *p, const char **end, uint32_t *out)
{
	uint64_t v = 0;

	if (*p == '*') {
		*out = PROTO_CRED_ANY;
		*end = p + 1;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v >= PROTO_CRED_ANY)
			return -EINVAL;
	}
	*out = v;
	*end = p;
	return 0;
}

static int cred_pair(const char *p, const char **end, struct proto_cred *c)
{
	if (cred_field(p, &p, &c->uid) || *p != ':' ||
	    cred_field(p + 1, end, &c->gid))
		return -EINVAL;
	return 0;
}

int proto_cred_parse(const char *text, struct proto_cred *cred)
{
	const char *end;

	if (cred_pair(text, &end, cred) || *end)
		return -EINVAL;
	return 0;
}

int proto_creds_parse(const char *text, uint32_t nreducers,
		      struct proto_cred *allow, const char **why)
{
	uint64_t named = 0;
	const char *p = text;

	for (;;) {
		struct proto_cred c;
		uint32_t id;

		if (cred_field(p, &p, &id) || id == PROTO_CRED_ANY || *p != ':')
			BAD(-EINVAL, "expected ID:UID:GID");
		if (id < 1 || id > nreducers)
			BAD(-EINVAL, "reducer id out of range");
		if (named & (1ULL << id))
			BAD(-EINVAL, "reducer id named twice");
		if (cred_pair(p + 1, &p, &c))
			BAD(-EINVAL, "expected ID:UID:GID");
		named |= 1ULL << id;
		allow[id] = c;
		if (!*p)
			return 0;
		if (*p++ != ';')
			BAD(-EINVAL, "expected ; between entries");
	}
}
