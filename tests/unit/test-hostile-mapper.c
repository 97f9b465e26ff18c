// SPDX-License-Identifier: MIT
/*
 * A hostile mapper: the reducer's side of the handshake (which a reducer's
 * QEMU also runs whenever it rejoins) against every wrong answer.  Each is
 * refused with its own error, and no descriptor that came with it stays
 * open.  A well-formed WELCOME, last, is accepted.
 */
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "fds.h"
#include "hostile.h"

#define SLICE	(64 * 1024)

static struct proto_msg welcome(uint32_t id)
{
	struct proto_msg m = {
		.version = PROTO_VERSION, .type = PROTO_WELCOME,
		.welcome = {
			.id = id, .nreducers = 2, .region_size = 3 * SLICE,
			.slice_size = SLICE, .slot_offset = id * SLICE,
			.nvectors = 1,
		},
	};
	return m;
}

static int slot(size_t size)
{
	return slot_memfd(size, PROTO_SLOT_SEALS);
}

/*
 * The fake mapper answers first (the reducer's HELLO then waits in the
 * socket); the reducer's handshake must end in @want.
 */
static void expect(const char *what, const void *answer, size_t len,
		   const int *fds, unsigned int nfds, int hang_up, int want,
		   const char *reason)
{
	char got_reason[PROTO_REASON_LEN];
	int sv[2], efd, rfds[PROTO_MAX_FDS], ret;
	struct proto_msg w;

	T_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	if (len)
		raw_send(sv[1], answer, len, fds, nfds);
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	if (hang_up)	/* it stops talking; the HELLO still gets through */
		T_EQ(shutdown(sv[1], SHUT_WR), 0);
	efd = eventfd(0, EFD_CLOEXEC);
	ret = proto_client_hello(sv[0], 1, 1, &efd, 50, &w, rfds, got_reason,
				 sizeof(got_reason));
	T_ASSERT(ret == want, "%s: got %d (%s), want %d", what, ret,
		 got_reason, want);
	if (reason)
		T_ASSERT(!strcmp(got_reason, reason), "%s: reason \"%s\"",
			 what, got_reason);
	if (ret == 0)
		proto_close_fds(rfds, 2);
	close(efd);
	close(sv[0]);
	close(sv[1]);
	printf("%s: %s\n", want ? "refused" : "accepted", what);
}

static void expect_msg(const char *what, const struct proto_msg *m,
		       const int *fds, unsigned int nfds, int want,
		       const char *reason)
{
	uint8_t buf[PROTO_BUF_SIZE];
	size_t len = proto_encode(m, buf, sizeof(buf));

	T_ASSERT(len, "encode");
	expect(what, buf, len, fds, nfds, 0, want, reason);
}

int main(void)
{
	int before = open_fd_count(), fds[3], p[2];
	struct proto_msg m;
	uint8_t junk[40];

	for (unsigned int i = 0; i < sizeof(junk); i++)
		junk[i] = i * 37 + 11;
	fds[0] = slot(SLICE);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect("garbage with descriptors", junk, sizeof(junk), fds, 2, 0,
	       -EBADMSG, NULL);

	expect("silence", NULL, 0, NULL, 0, 0, -ETIMEDOUT, NULL);
	expect("hang-up", NULL, 0, NULL, 0, 1, -ECONNRESET, NULL);

	m = welcome(1);
	fds[0] = slot(SLICE / 2);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect_msg("slot of the wrong size", &m, fds, 2, -EPROTO,
		   "the slot is not a file of the slice size");

	/* A slot the mapper could truncate under us. */
	fds[0] = slot_memfd(SLICE, 0);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect_msg("an unsealed slot", &m, fds, 2, -EPROTO,
		   "the slot is not sealed as the mapper seals its slots");

	T_EQ(pipe2(p, O_CLOEXEC), 0);
	fds[0] = slot(SLICE);
	fds[1] = p[0];
	close(p[1]);
	expect_msg("a pipe for an eventfd", &m, fds, 2, -EPROTO,
		   "an fd from the mapper is not an eventfd");

	fds[0] = eventfd(0, EFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect_msg("an eventfd for the slot", &m, fds, 2, -EPROTO,
		   "the slot is not a file of the slice size");

	fds[0] = slot(SLICE);
	expect_msg("too few descriptors", &m, fds, 1, -EBADF, NULL);

	fds[0] = slot(SLICE);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	fds[2] = eventfd(0, EFD_CLOEXEC);
	expect_msg("too many descriptors", &m, fds, 3, -EBADF, NULL);

	m = welcome(2);
	fds[0] = slot(SLICE);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect_msg("WELCOME for another id", &m, fds, 2, -EPROTO,
		   "WELCOME for another id or vector count");

	m = (struct proto_msg){
		.version = PROTO_VERSION, .type = PROTO_HELLO,
		.hello = { .id = 1, .nvectors = 1 },
	};
	fds[0] = eventfd(0, EFD_CLOEXEC);
	expect_msg("a HELLO back", &m, fds, 1, -EPROTO, "expected WELCOME");

	m = (struct proto_msg){
		.version = PROTO_VERSION, .type = PROTO_REFUSE,
		.refuse = { .code = PROTO_E_ID_BUSY, .reason = "go away" },
	};
	expect_msg("REFUSE", &m, NULL, 0, -proto_refusal_errno(PROTO_E_ID_BUSY),
		   "go away");

	m = welcome(1);
	fds[0] = slot(SLICE);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	expect_msg("a good WELCOME", &m, fds, 2, 0, NULL);

	T_EQ(open_fd_count(), before);
	printf("no descriptor left open\n");
	return 0;
}
