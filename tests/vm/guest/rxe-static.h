/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Verbs in static guest programs.  libibverbs.a finds no provider by
 * itself: a static program names the ones it links (RDMA_STATIC_PROVIDERS,
 * <infiniband/verbs.h>), and only a call of ibv_get_device_list() compiled
 * with that macro registers them.  librdmacm.a calls ibv_get_device_list()
 * without it, so a program calls rxe_static_init() before any rdma_*() or
 * ibv_*() call; rxe-static.c is the one place that registers rxe, for every
 * static guest program that uses verbs (link it with $(GUEST_VERBS_LIBS)).
 */
#ifndef RXE_STATIC_H
#define RXE_STATIC_H

/*
 * Register the static rxe provider (at the first call, which must come
 * before the program starts threads) and return how many verbs devices
 * there are now, or -errno.  librdmacm reads its device list once, at its
 * first call: make the rxe devices before that.
 */
int rxe_static_init(void);

#endif
