/* SPDX-License-Identifier: MIT */
/*
 * A mapper's setup, in the one order both mappers follow (libsivshm's host
 * backend and the QEMU device): cut the region into slots and create their
 * files (proto_mapper_open()); the owner maps the slots its own way; then
 * the server over them, with the owner's callbacks and credentials,
 * listening (proto_mapper_serve()).
 */
#ifndef SIVSHM_MAPPER_H
#define SIVSHM_MAPPER_H

#include <stdarg.h>
#include <stdint.h>

#include "cred.h"
#include "geometry.h"
#include "region.h"
#include "server.h"

struct proto_mapper_conf {
	uint64_t size;			/* the whole region, in bytes */
	uint32_t nreducers;
	uint32_t nvectors;
	uint32_t page_size;		/* the slots' pages */
	const char *name;		/* the region's (its slots' files) */
	const char *dir;		/* where they are, or NULL */
	int persist;			/* the slots outlive the mapper */
	const char *socket_path;
	/* Who may take reducer id j, [1..nreducers]; NULL: anyone. */
	const struct proto_cred *allow;
	/* The server's callbacks (server.h); adopt_slot only with persist. */
	void (*peer_changed)(void *opaque, uint32_t id, int connected);
	int (*adopt_slot)(void *opaque, uint32_t id, int fd);
	void (*log)(void *opaque, const char *fmt, va_list ap)
		__attribute__((format(printf, 2, 0)));
	void *opaque;
};

/* The step that failed, for the owner to say in its own way. */
enum proto_mapper_step {
	PROTO_MAPPER_GEOMETRY,		/* no geometry for size and nreducers */
	PROTO_MAPPER_SLOTS,		/* sivshm_region_open() */
	PROTO_MAPPER_EVENTFDS,		/* proto_server_init() */
	PROTO_MAPPER_LISTEN,		/* proto_server_listen() */
};

/*
 * Cut @conf's region into slots (@geo) and create or reattach their files
 * (@region).  Returns 0, or -errno with *@failed said and nothing open.
 */
int proto_mapper_open(const struct proto_mapper_conf *conf,
		      struct sivshm_geometry *geo,
		      struct sivshm_region *region,
		      enum proto_mapper_step *failed);

/*
 * Once the owner has mapped the slots: the server over them (@srv), with
 * @conf's callbacks and credentials, listening on its socket.  Returns 0,
 * or -errno with *@failed said and @srv finished.
 */
int proto_mapper_serve(const struct proto_mapper_conf *conf,
		       const struct sivshm_geometry *geo,
		       const struct sivshm_region *region,
		       struct proto_server *srv,
		       enum proto_mapper_step *failed);

#endif
