// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA netlink requests (nldev.h): a request is one message of
 * attributes straight after the netlink header (the nldev family has no
 * header of its own); the kernel answers with an acknowledgment, or with
 * a dump's messages ended by NLMSG_DONE.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "nldev.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK	270
#endif

/* The kernel's bound on a device name (IB_DEVICE_NAME_MAX), NUL included. */
#define NLDEV_NAME_MAX	64

const char *const nldev_res_name[NLDEV_RES_COUNT] = {
	[NLDEV_RES_PD] = "pd",
	[NLDEV_RES_CQ] = "cq",
	[NLDEV_RES_QP] = "qp",
	[NLDEV_RES_CM_ID] = "cm_id",
	[NLDEV_RES_MR] = "mr",
	[NLDEV_RES_CTX] = "ctx",
	[NLDEV_RES_SRQ] = "srq",
};

union nl_buf {
	char buf[32768];
	struct nlmsghdr align;
};

/* The last error's extended-ack message, kept for the caller. */
static char ack_msg[256];

static int nl_open(void)
{
	struct timeval tv = { .tv_sec = NLDEV_TIMEOUT_S };
	int fd, one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		int err = -errno;

		close(fd);
		return err;
	}
	/* Best effort: without them an error has its errno only. */
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	return fd;
}

static void nl_start(struct nlmsghdr *nlh, uint16_t cmd, uint16_t flags)
{
	nlh->nlmsg_len = NLMSG_HDRLEN;
	nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = (uint32_t)getpid();
	nlh->nlmsg_pid = 0;
}

/* Append a string attribute (with its NUL); -EMSGSIZE if it does not fit. */
static int put_str(struct nlmsghdr *nlh, size_t size, uint16_t type,
		   const char *s)
{
	size_t len = strlen(s) + 1;
	size_t room = NLA_ALIGN(NLA_HDRLEN + len);
	struct nlattr *nla;

	if (room > size || NLMSG_ALIGN(nlh->nlmsg_len) > size - room)
		return -EMSGSIZE;
	nla = (struct nlattr *)((char *)nlh + NLMSG_ALIGN(nlh->nlmsg_len));
	nla->nla_type = type;
	nla->nla_len = NLA_HDRLEN + len;
	memcpy((char *)nla + NLA_HDRLEN, s, len);
	memset((char *)nla + NLA_HDRLEN + len, 0, room - NLA_HDRLEN - len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + room;
	return 0;
}

static int nl_send(int fd, const struct nlmsghdr *nlh)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	ssize_t n;

	n = sendto(fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&kernel,
		   sizeof(kernel));
	if (n < 0)
		return -errno;
	return (size_t)n == nlh->nlmsg_len ? 0 : -EMSGSIZE;
}

/* One datagram of the kernel's answer: its length, or -errno. */
static ssize_t nl_recv(int fd, union nl_buf *u)
{
	ssize_t n = recv(fd, u->buf, sizeof(u->buf), MSG_TRUNC);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ?
		       -ETIMEDOUT : -errno;
	return (size_t)n > sizeof(u->buf) ? -EMSGSIZE : n;
}

/*
 * The error an NLMSG_ERROR carries (0: an acknowledgment), its
 * extended-ack message copied to ack_msg.  With NETLINK_CAP_ACK the
 * attributes follow struct nlmsgerr directly.
 */
static int nl_error(const struct nlmsghdr *nlh, const char **msg)
{
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct nlmsgerr));
	const struct nlmsgerr *e = NLMSG_DATA(nlh);
	const struct nlattr *nla;

	if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return -EPROTO;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) ||
	    !(nlh->nlmsg_flags & NLM_F_CAPPED))
		return e->error;
	while (off + NLA_HDRLEN <= nlh->nlmsg_len) {
		nla = (const struct nlattr *)((const char *)nlh + off);
		if (nla->nla_len < NLA_HDRLEN ||
		    nla->nla_len > nlh->nlmsg_len - off)
			break;
		if ((nla->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG &&
		    nla->nla_len > NLA_HDRLEN &&
		    memchr((const char *)nla + NLA_HDRLEN, '\0',
			   nla->nla_len - NLA_HDRLEN)) {
			snprintf(ack_msg, sizeof(ack_msg), "%s",
				 (const char *)nla + NLA_HDRLEN);
			*msg = ack_msg;
			break;
		}
		off += NLA_ALIGN(nla->nla_len);
	}
	return e->error;
}

int nldev_link_add_rxe(const char *rxe, const char *netdev, const char **msg)
{
	union nl_buf u;
	struct nlmsghdr *nlh = &u.align;
	uint32_t seq;
	int fd, err;
	ssize_t n;

	*msg = NULL;
	if (!*rxe || strlen(rxe) >= NLDEV_NAME_MAX || strchr(rxe, '%') ||
	    !*netdev || strlen(netdev) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	fd = nl_open();
	if (fd < 0)
		return fd;
	nl_start(nlh, RDMA_NLDEV_CMD_NEWLINK, NLM_F_ACK);
	seq = nlh->nlmsg_seq;
	err = put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_DEV_NAME, rxe);
	if (!err)
		err = put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_LINK_TYPE,
			      "rxe");
	if (!err)
		err = put_str(nlh, sizeof(u.buf), RDMA_NLDEV_ATTR_NDEV_NAME,
			      netdev);
	if (!err)
		err = nl_send(fd, nlh);
	while (!err) {
		size_t len;

		n = nl_recv(fd, &u);
		if (n < 0) {
			err = n;
			break;
		}
		len = n;
		for (nlh = &u.align; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len))
			if (nlh->nlmsg_seq == seq &&
			    nlh->nlmsg_type == NLMSG_ERROR) {
				err = nl_error(nlh, msg);
				close(fd);
				return err;
			}
	}
	close(fd);
	return err;
}

/* Attribute @type among those in [@p, @end), or NULL. */
static const struct nlattr *nla_find(const char *p, const char *end,
				     uint16_t type)
{
	while (end - p >= NLA_HDRLEN) {
		const struct nlattr *nla = (const struct nlattr *)p;

		if (nla->nla_len < NLA_HDRLEN || nla->nla_len > end - p)
			return NULL;
		if ((nla->nla_type & NLA_TYPE_MASK) == type)
			return nla;
		p += NLA_ALIGN(nla->nla_len);
	}
	return NULL;
}

static const char *nla_data(const struct nlattr *nla)
{
	return (const char *)nla + NLA_HDRLEN;
}

static const char *nla_end(const struct nlattr *nla)
{
	return (const char *)nla + nla->nla_len;
}

/* Is @nla a NUL-terminated string equal to @s? */
static int nla_is_str(const struct nlattr *nla, const char *s)
{
	size_t len = nla->nla_len - NLA_HDRLEN;

	return len == strlen(s) + 1 && !memcmp(nla_data(nla), s, len);
}

/* One device's summary from a RES_GET message: 1 if it is @dev's. */
static int parse_summary(const struct nlmsghdr *nlh, const char *dev,
			 uint64_t count[NLDEV_RES_COUNT], unsigned int *seen)
{
	const char *p = (const char *)NLMSG_DATA(nlh);
	const char *end = (const char *)nlh + nlh->nlmsg_len;
	const struct nlattr *name, *table;

	name = nla_find(p, end, RDMA_NLDEV_ATTR_DEV_NAME);
	if (!name || !nla_is_str(name, dev))
		return 0;
	table = nla_find(p, end, RDMA_NLDEV_ATTR_RES_SUMMARY);
	if (!table)
		return 1;
	for (p = nla_data(table); nla_end(table) - p >= NLA_HDRLEN;) {
		const struct nlattr *e = (const struct nlattr *)p;
		const struct nlattr *ename, *curr;

		if (e->nla_len < NLA_HDRLEN || e->nla_len > nla_end(table) - p)
			break;
		p += NLA_ALIGN(e->nla_len);
		ename = nla_find(nla_data(e), nla_end(e),
				 RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME);
		curr = nla_find(nla_data(e), nla_end(e),
				RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR);
		if (!ename || !curr ||
		    curr->nla_len != NLA_HDRLEN + sizeof(uint64_t))
			continue;
		for (unsigned int k = 0; k < NLDEV_RES_COUNT; k++)
			if (nla_is_str(ename, nldev_res_name[k])) {
				memcpy(&count[k], nla_data(curr),
				       sizeof(uint64_t));
				*seen |= 1u << k;
			}
	}
	return 1;
}

int nldev_res_summary(const char *dev, uint64_t count[NLDEV_RES_COUNT])
{
	union nl_buf u;
	struct nlmsghdr *nlh = &u.align;
	unsigned int seen = 0;
	int fd, err, found = 0;
	const char *msg;
	uint32_t seq;

	fd = nl_open();
	if (fd < 0)
		return fd;
	nl_start(nlh, RDMA_NLDEV_CMD_RES_GET, NLM_F_DUMP);
	seq = nlh->nlmsg_seq;
	err = nl_send(fd, nlh);
	while (!err) {
		ssize_t n = nl_recv(fd, &u);
		size_t len;

		if (n < 0) {
			err = n;
			break;
		}
		len = n;
		for (nlh = &u.align; NLMSG_OK(nlh, len);
		     nlh = NLMSG_NEXT(nlh, len)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_DONE)
				goto done;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				err = nl_error(nlh, &msg);
				if (!err)
					err = -EPROTO;
				break;
			}
			found |= parse_summary(nlh, dev, count, &seen);
		}
	}
done:
	close(fd);
	if (err)
		return err;
	if (!found)
		return -ENODEV;
	return seen == (1u << NLDEV_RES_COUNT) - 1 ? 0 : -EPROTO;
}
