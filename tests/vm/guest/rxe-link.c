// SPDX-License-Identifier: GPL-2.0
/*
 * rxe-link add RXENAME NETDEV: make a Soft-RoCE device RXENAME on the
 * network device NETDEV, as `rdma link add RXENAME type rxe netdev NETDEV`
 * does (busybox has no rdma tool); the kernel's acknowledgment says whether
 * the device exists when it returns.
 * rxe-link res RXENAME: one line of how many resources of each kind the
 * device holds, as `rdma resource show` does: "pd N cq N ...".
 * Errors are said with the kernel's errno and, when the kernel gives one,
 * its extended-ack message.  Exits 0 or 1.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nldev.h"

static const char *prog = "rxe-link";

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static const char *hint(int err)
{
	switch (err) {
	case ENODEV:
		return " (no such network device)";
	case EEXIST:
		return " (the name is taken, or the netdev has an rxe device)";
	case EINVAL:
		return " (no link type rxe: is rdma_rxe loaded?)";
	case ENOENT:
		return " (rxe found no crc32 for its ICRC: load crc32_generic)";
	case EPERM:
		return " (needs CAP_NET_ADMIN)";
	default:
		return "";
	}
}

static void link_add(const char *rxe, const char *netdev)
{
	const char *msg;
	int err;

	err = nldev_link_add_rxe(rxe, netdev, &msg);
	if (err == -ENAMETOOLONG)
		die("bad names \"%s\", \"%s\" (a device of 1 to 63 "
		    "characters, no %%; a network device of 1 to 15)", rxe,
		    netdev);
	if (err == -ETIMEDOUT)
		die("no answer from the kernel in %d s", NLDEV_TIMEOUT_S);
	if (err)
		die("add %s type rxe netdev %s: %s%s%s%s", rxe, netdev,
		    strerror(-err), hint(-err), msg ? ": " : "",
		    msg ? msg : "");
	printf("%s: %s on %s\n", prog, rxe, netdev);
}

static void res_show(const char *dev)
{
	uint64_t count[NLDEV_RES_COUNT];
	int err;

	err = nldev_res_summary(dev, count);
	if (err)
		die("resources of %s: %s", dev, strerror(-err));
	for (unsigned int k = 0; k < NLDEV_RES_COUNT; k++)
		printf("%s%s %llu", k ? " " : "", nldev_res_name[k],
		       (unsigned long long)count[k]);
	printf("\n");
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "add"))
		link_add(argv[2], argv[3]);
	else if (argc == 3 && !strcmp(argv[1], "res"))
		res_show(argv[2]);
	else {
		fprintf(stderr, "usage: %s add RXENAME NETDEV\n"
			"       %s res RXENAME\n", prog, prog);
		return 1;
	}
	return 0;
}
