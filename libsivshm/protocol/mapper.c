// SPDX-License-Identifier: MIT
/* A mapper's setup, shared by libsivshm's host backend and the QEMU device. */
#include "mapper.h"

int proto_mapper_open(const struct proto_mapper_conf *conf,
		      struct sivshm_geometry *geo,
		      struct sivshm_region *region,
		      enum proto_mapper_step *failed)
{
	int err;

	err = sivshm_geometry_init(geo, conf->size, conf->nreducers,
				   conf->page_size);
	if (err) {
		*failed = PROTO_MAPPER_GEOMETRY;
		return err;
	}
	err = sivshm_region_open(region, geo, conf->name, conf->dir,
				 conf->persist);
	if (err)
		*failed = PROTO_MAPPER_SLOTS;
	return err;
}

int proto_mapper_serve(const struct proto_mapper_conf *conf,
		       const struct sivshm_geometry *geo,
		       const struct sivshm_region *region,
		       struct proto_server *srv,
		       enum proto_mapper_step *failed)
{
	int err;

	err = proto_server_init(srv, geo, conf->nvectors, region->fd);
	if (err) {
		*failed = PROTO_MAPPER_EVENTFDS;
		return err;
	}
	if (conf->allow) {
		for (uint32_t j = 1; j <= geo->nreducers; j++)
			srv->allow[j] = conf->allow[j];
	}
	srv->peer_changed = conf->peer_changed;
	srv->log = conf->log;
	srv->opaque = conf->opaque;
	if (conf->persist)
		srv->adopt_slot = conf->adopt_slot;
	err = proto_server_listen(srv, conf->socket_path);
	if (err) {
		*failed = PROTO_MAPPER_LISTEN;
		proto_server_fini(srv);
	}
	return err;
}
