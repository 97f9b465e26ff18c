// SPDX-License-Identifier: GPL-2.0
/*
 * The static rxe provider's registration (rxe-static.h).  The macro must be
 * seen by <infiniband/verbs.h> in this file, and in this file only: it turns
 * ibv_get_device_list() into a call that registers the providers first,
 * and each call of it registers them again.
 */
#define RDMA_STATIC_PROVIDERS rxe

#include <errno.h>
#include <infiniband/verbs.h>

#include "rxe-static.h"

int rxe_static_init(void)
{
	static int registered;
	struct ibv_device **list;
	int n = 0;

	errno = 0;
	if (!registered) {
		list = ibv_get_device_list(&n);
		registered = 1;
	} else {
		/* The function itself, not the macro: registered already. */
		list = (ibv_get_device_list)(&n);
	}
	if (!list)
		return errno ? -errno : -ENODEV;
	ibv_free_device_list(list);
	return n;
}
