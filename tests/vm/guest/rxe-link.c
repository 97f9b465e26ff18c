// SPDX-License-Identifier: GPL-2.0
/*
 * rxe-link add RXENAME NETDEV: make a Soft-RoCE device RXENAME on the
 * network device NETDEV, as `rdma link add RXENAME type rxe netdev NETDEV`
 * does (busybox has no rdma tool).  One RDMA_NLDEV_CMD_NEWLINK request on a
 * NETLINK_RDMA socket; the kernel's acknowledgment says whether the device
 * exists when it returns.  Errors are said with the kernel's errno and, when
 * the kernel gives one, its extended-ack message.  Exits 0 or 1.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* The kernel's bounds (IB_DEVICE_NAME_MAX; IFNAMSIZ), NUL included. */
#define RXE_NAME_MAX	64
/* How long the kernel may take to answer. */
#define ACK_TIMEOUT_S	20

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

/* Append a string attribute (with its NUL) to the message in @buf. */
static void put_str(struct nlmsghdr *nlh, size_t size, uint16_t type,
		    const char *s)
{
	size_t len = strlen(s) + 1;
	size_t room = NLA_ALIGN(NLA_HDRLEN + len);
	struct nlattr *nla;

	if (room > size || NLMSG_ALIGN(nlh->nlmsg_len) > size - room)
		die("attribute %u does not fit in the request", type);
	nla = (struct nlattr *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));
	nla->nla_type = type;
	nla->nla_len = NLA_HDRLEN + len;
	memcpy((char *)nla + NLA_HDRLEN, s, len);
	memset((char *)nla + NLA_HDRLEN + len, 0,
	       room - NLA_HDRLEN - len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + room;
}

/*
 * The extended-ack message of an error, if the kernel sent one: with
 * NETLINK_CAP_ACK the attributes follow struct nlmsgerr directly.
 */
static const char *ext_ack_msg(const struct nlmsghdr *nlh)
{
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct nlmsgerr));
	const struct nlattr *nla;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) ||
	    !(nlh->nlmsg_flags & NLM_F_CAPPED))
		return NULL;
	while (off + NLA_HDRLEN <= nlh->nlmsg_len) {
		nla = (const struct nlattr *)((const char *)nlh + off);
		if (nla->nla_len < NLA_HDRLEN ||
		    nla->nla_len > nlh->nlmsg_len - off)
			return NULL;
		if ((nla->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG &&
		    nla->nla_len > NLA_HDRLEN &&
		    memchr((const char *)nla + NLA_HDRLEN, '\0',
			   nla->nla_len - NLA_HDRLEN))
			return (const char *)nla + NLA_HDRLEN;
		off += NLA_ALIGN(nla->nla_len);
	}
	return NULL;
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

/* Wait for the acknowledgment of request @seq: 0, or a positive errno. */
static int wait_ack(int fd, uint32_t seq, const char **msg)
{
	union {
		char buf[8192];
		struct nlmsghdr align;
	} u;
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;
	ssize_t n;
	size_t len;

	*msg = NULL;
	for (;;) {
		n = recv(fd, u.buf, sizeof(u.buf), 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			die("no answer from the kernel in %d s", ACK_TIMEOUT_S);
		if (n < 0)
			die("recv: %s", strerror(errno));
		len = n;
		for (nlh = &u.align; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type != NLMSG_ERROR)
				continue;
			if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				die("a truncated acknowledgment (%u bytes)",
				    nlh->nlmsg_len);
			e = NLMSG_DATA(nlh);
			*msg = ext_ack_msg(nlh);
			return -e->error;
		}
		if (len)
			die("%zu trailing bytes in the kernel's answer", len);
	}
}

static void link_add(const char *rxe, const char *netdev)
{
	union {
		char buf[512];
		struct nlmsghdr align;
	} u;
	struct nlmsghdr *nlh = &u.align;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = ACK_TIMEOUT_S };
	uint32_t seq = (uint32_t)getpid();
	const char *msg;
	int fd, one = 1, err;
	ssize_t n;

	if (!*rxe || strlen(rxe) >= RXE_NAME_MAX || strchr(rxe, '%'))
		die("bad device name \"%s\" (1 to %d characters, no %%)", rxe,
		    RXE_NAME_MAX - 1);
	if (!*netdev || strlen(netdev) >= IFNAMSIZ)
		die("bad network device name \"%s\" (1 to %d characters)",
		    netdev, IFNAMSIZ - 1);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		die("socket(NETLINK_RDMA): %s (is ib_core loaded?)",
		    strerror(errno));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO: %s", strerror(errno));
	/* Best effort: without them an error has its errno only. */
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));

	memset(&u, 0, sizeof(u));
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
					   RDMA_NLDEV_CMD_NEWLINK);
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_DEV_NAME, rxe);
	put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_LINK_TYPE, "rxe");
	put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_NDEV_NAME, netdev);

	n = sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel));
	if (n < 0)
		die("send: %s", strerror(errno));
	if ((size_t)n != nlh->nlmsg_len)
		die("sent %zd of %u bytes", n, nlh->nlmsg_len);

	err = wait_ack(fd, seq, &msg);
	close(fd);
	if (err)
		die("add %s type rxe netdev %s: %s%s%s%s", rxe, netdev,
		    strerror(err), hint(err), msg ? ": " : "", msg ? msg : "");
	printf("%s: %s on %s\n", prog, rxe, netdev);
}

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "add")) {
		fprintf(stderr, "usage: %s add RXENAME NETDEV\n", prog);
		return 1;
	}
	link_add(argv[2], argv[3]);
	return 0;
}
