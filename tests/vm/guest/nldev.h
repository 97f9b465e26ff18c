/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RDMA netlink (NETLINK_RDMA, the nldev family) for the guests' tools:
 * what `rdma link add` and `rdma resource` do, for guests whose busybox
 * has no rdma tool.  Each call opens its own socket, bounds its wait for
 * the kernel by NLDEV_TIMEOUT_S, and returns 0 or -errno; on a kernel
 * error *@msg is its extended-ack message (or NULL).
 */
#ifndef SIVSHM_TESTS_NLDEV_H
#define SIVSHM_TESTS_NLDEV_H

#include <stdint.h>

/* How long the kernel may take to answer. */
#define NLDEV_TIMEOUT_S		20

/*
 * Make the Soft-RoCE device @rxe on the network device @netdev.
 * -ENAMETOOLONG for a name out of bounds (empty, too long, or a device
 * name with a %).
 */
int nldev_link_add_rxe(const char *rxe, const char *netdev, const char **msg);

/* The kinds of resource the kernel tracks per device (restrack). */
enum nldev_res {
	NLDEV_RES_PD,
	NLDEV_RES_CQ,
	NLDEV_RES_QP,
	NLDEV_RES_CM_ID,
	NLDEV_RES_MR,
	NLDEV_RES_CTX,
	NLDEV_RES_SRQ,
	NLDEV_RES_COUNT,
};
extern const char *const nldev_res_name[NLDEV_RES_COUNT];

/*
 * How many resources of each kind device @dev holds now, from every user
 * (`rdma resource show`).  -ENODEV if the kernel knows no such device;
 * -EPROTO if its answer lacks a kind.
 */
int nldev_res_summary(const char *dev, uint64_t count[NLDEV_RES_COUNT]);

#endif
