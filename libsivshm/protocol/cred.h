/* SPDX-License-Identifier: MIT */
/* Peer credentials: SO_PEERCRED, and the texts that say who may connect. */
#ifndef SIVSHM_CRED_H
#define SIVSHM_CRED_H

#include <stdint.h>

/*
 * Peer credentials, from SO_PEERCRED: who may take a reducer id (the
 * mapper's check) or be the mapper (a reducer's).  PROTO_CRED_ANY in a
 * field allows any value.
 */
#define PROTO_CRED_ANY		UINT32_MAX
struct proto_cred {
	uint32_t uid;
	uint32_t gid;
};

/* The credentials of the process at the other end of @sock. */
int proto_cred_get(int sock, struct proto_cred *got);

/* Whether @got is allowed by @want. */
int proto_cred_allows(const struct proto_cred *want,
		      const struct proto_cred *got);

/*
 * Parse "UID:GID" (each a decimal number below PROTO_CRED_ANY, or "*")
 * into @cred.  Returns 0 or -EINVAL.
 */
int proto_cred_parse(const char *text, struct proto_cred *cred);

/*
 * Parse "ID:UID:GID[;ID:UID:GID]..." into @allow[1..@nreducers] (ids
 * not named keep what they had).  Each ID is 1..@nreducers and named at
 * most once.  Returns 0, or -EINVAL with *@why set.
 */
int proto_creds_parse(const char *text, uint32_t nreducers,
		      struct proto_cred *allow, const char **why);

#endif
