/* SPDX-License-Identifier: MIT */
/*
 * The handshake's socket calls: a message of proto.h and its fds over a
 * unix SOCK_SEQPACKET socket.
 */
#ifndef SIVSHM_SOCK_H
#define SIVSHM_SOCK_H

#include <stdint.h>

#include "proto.h"

/*
 * Send @msg with @fds (proto_nfds(msg) of them).  Returns 0 or -errno.
 * Never blocks when @sock is non-blocking: -EAGAIN means a stuck peer.
 */
int proto_send(int sock, const struct proto_msg *msg, const int *fds);

/*
 * Receive one message into @buf (PROTO_BUF_SIZE bytes) and up to
 * PROTO_MAX_FDS fds (close-on-exec).  Returns the message length, 0 at the
 * end of the stream or for an empty message (which cannot be told apart),
 * or -errno: -EMSGSIZE for a message that did not fit, -ETOOMANYREFS for
 * more fds than PROTO_MAX_FDS, -EBADMSG for ancillary data that is not
 * SCM_RIGHTS.  Unless it returns a positive length, no fd is left open.
 */
int proto_recv(int sock, uint8_t *buf, int *fds, unsigned int *nfds);

/* CLOCK_MONOTONIC in milliseconds: the handshake's deadlines. */
int64_t proto_now_ms(void);

#endif
