/* SPDX-License-Identifier: MIT */
/*
 * The reducer's side of the SIVSHM handshake, shared by libsivshm's host
 * backend and the QEMU device.
 */
#ifndef SIVSHM_CLIENT_H
#define SIVSHM_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "cred.h"
#include "proto.h"

/*
 * A reducer whose mapper is not there yet connects again after
 * PROTO_CONNECT_RETRY_MIN_MS, doubling the wait up to ..._MAX_MS; one the
 * mapper found busy or hung up on says HELLO again after
 * PROTO_JOIN_RETRY_MS.
 */
#define PROTO_CONNECT_RETRY_MIN_MS	1
#define PROTO_CONNECT_RETRY_MAX_MS	32
#define PROTO_JOIN_RETRY_MS		5

/*
 * A reducer's QEMU whose mapper left tries to rejoin after
 * PROTO_REJOIN_MIN_MS, doubling up to PROTO_REJOIN_MAX_MS, and waits
 * PROTO_REJOIN_ANSWER_MS for each answer.
 */
#define PROTO_REJOIN_MIN_MS		50
#define PROTO_REJOIN_MAX_MS		1000
#define PROTO_REJOIN_ANSWER_MS		2000

/*
 * Connect to the mapper's socket at @path, retrying while it does not exist
 * or nobody listens, for at most @timeout_ms.  Returns the socket or -errno
 * (-ETIMEDOUT when the mapper never appeared).
 */
int proto_client_connect(const char *path, int timeout_ms);

/*
 * Say HELLO as reducer @id with @nvectors eventfds @efds and wait at most
 * @timeout_ms for the answer.  On WELCOME returns 0 with @welcome filled and
 * @fds[0] the slot fd (checked: a regular file of exactly slice_size bytes)
 * and @fds[1..nvectors] the mapper's eventfds (checked).  On REFUSE returns
 * the matching -errno with the mapper's reason copied into @reason.
 */
int proto_client_hello(int sock, uint32_t id, uint32_t nvectors,
		       const int *efds, int timeout_ms,
		       struct proto_msg *welcome, int *fds,
		       char *reason, size_t reason_len);

/*
 * The two halves of proto_client_hello(), for a caller with its own event
 * loop: send HELLO, then, once @sock is readable, take the answer.  A
 * reducer rejoining with the slot it holds passes it as @slot_fd (else -1):
 * a restarted persistent mapper takes it back (PROTO_F_SLOT).
 */
int proto_client_send_hello(int sock, uint32_t id, uint32_t nvectors,
			    const int *efds, int slot_fd);
int proto_client_recv_welcome(int sock, uint32_t id, uint32_t nvectors,
			      struct proto_msg *welcome, int *fds,
			      char *reason, size_t reason_len);

/*
 * Whether the mapper at the other end of @sock has credentials @want
 * allows (NULL allows anyone): 0, or -EACCES with @reason said.  Checked
 * before HELLO, so that a mapper we do not trust gets no eventfd.
 */
int proto_client_check_mapper(int sock, const struct proto_cred *want,
			      char *reason, size_t reason_len);

/*
 * Connect, check the mapper's credentials against @mapper (NULL: any) and
 * say HELLO, as the calls above, trying again while the mapper is busy
 * (too many handshakes at once) or hangs up before answering, all within
 * @timeout_ms.  Returns the socket (>= 0) with @welcome and @fds filled,
 * or -errno.
 */
int proto_client_join(const char *path, uint32_t id, uint32_t nvectors,
		      const int *efds, const struct proto_cred *mapper,
		      int timeout_ms, struct proto_msg *welcome, int *fds,
		      char *reason, size_t reason_len);

#endif
