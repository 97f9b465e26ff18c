/* SPDX-License-Identifier: MIT */
/*
 * The mapper's RDMA service: listens with RDMA CM, authenticates remote
 * reducers (wire.h), and gives each its slot as one memory region in a
 * protection domain of its own.  It runs one thread; the mapper's handle
 * reaches it only through these calls.
 */
#ifndef SIVSHM_RDMA_SERVICE_H
#define SIVSHM_RDMA_SERVICE_H

#include <stdint.h>

#include "sivshm.h"

struct sivshm;
struct srd_service;

/*
 * A challenge is good in the epoch it was made in and the next (an epoch
 * is SRD_EPOCH_MS: 10 to 20 s in all), and once: the challenges of the
 * last SRD_SPENT proofs of each id are kept until they expire, and an id
 * with that many proofs live is refused until the oldest expires.
 */
#define SRD_EPOCH_MS		10000
#define SRD_SPENT		16

/*
 * Serve the ids of @opts->ids on @opts->listen for the mapper @sh.  The
 * caller has reserved those ids from the local protocol.  0 or -errno,
 * with the reason logged.
 */
int srd_service_start(struct sivshm *sh, const struct sivshm_remote_opts *opts,
		      struct srd_service **out);
void srd_service_stop(struct srd_service *svc);
/* Bitmap of the remote reducers connected now. */
uint64_t srd_service_peers(struct srd_service *svc);
/* Tell remote reducer @peer that [@offset, +@length) changed; ring @vector. */
int srd_service_notify(struct srd_service *svc, uint32_t peer,
		       uint32_t vector, uint64_t offset, uint64_t length);

#endif
