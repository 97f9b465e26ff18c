// SPDX-License-Identifier: MIT
/*
 * A reducer's departure, as the server's owner sees it: peer_changed(0)
 * comes while the departed reducer's eventfds are still open, so an owner
 * can unregister them first (QEMU deletes its ioeventfds by fd; a closed
 * one aborts it under KVM), and they are closed after it returns.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "hostile.h"
#include "client.h"
#include "fds.h"
#include "geometry.h"
#include "server.h"

static struct proto_server srv;
static int calls, open_during, out_fd;

static void changed(void *opaque, uint32_t id, int connected)
{
	T_EQ(id, 1);
	calls++;
	if (connected) {
		out_fd = srv.peer[1].out_fd[0];
	} else {
		T_EQ(srv.peer[1].out_fd[0], out_fd);
		open_during = fcntl(out_fd, F_GETFD) >= 0;
	}
}

/* One round of the server's loop, as its owner would run it. */
static void serve(void)
{
	struct pollfd pfd[PROTO_MAX_POLLFDS];
	unsigned int n = proto_server_pollfds(&srv, pfd);

	T_ASSERT(poll(pfd, n, 2000) > 0, "server idle");
	proto_server_dispatch(&srv, pfd, n);
}

int main(void)
{
	struct sivshm_geometry geo;
	int slot[2], efd, sock, fds[PROTO_MAX_FDS];
	char path[108], reason[PROTO_REASON_LEN];
	struct proto_msg w;

	snprintf(path, sizeof(path), "/tmp/sivshm-test-drop-%d.sock", getpid());
	T_EQ(sivshm_geometry_init(&geo, 1 << 20, 1, 4096), 0);
	for (int j = 0; j < 2; j++)
		slot[j] = slot_memfd(geo.slice_size, PROTO_SLOT_SEALS);
	T_EQ(proto_server_init(&srv, &geo, 1, slot), 0);
	srv.peer_changed = changed;
	T_EQ(proto_server_listen(&srv, path), 0);

	efd = eventfd(0, EFD_CLOEXEC);
	sock = proto_client_connect(path, 1000);
	T_ASSERT(sock >= 0, "connect");
	T_EQ(proto_client_send_hello(sock, 1, 1, &efd, -1), 0);
	while (calls < 1)
		serve();
	T_EQ(proto_client_recv_welcome(sock, 1, 1, &w, fds, reason,
				       sizeof(reason)), 0);
	proto_close_fds(fds, 2);

	close(sock);
	while (calls < 2)
		serve();
	T_ASSERT(open_during, "the eventfds were closed before peer_changed");
	T_ASSERT(fcntl(out_fd, F_GETFD) < 0, "the eventfds outlive the drop");
	printf("peer_changed saw the departed reducer's eventfds open; "
	       "closed after\n");
	close(efd);
	proto_server_fini(&srv);
	unlink(path);
	return 0;
}
