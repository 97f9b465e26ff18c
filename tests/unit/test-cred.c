// SPDX-License-Identifier: MIT
/*
 * Peer credentials.
 *
 * The mapper: with SIVSHM_CHECK_CREDS, an id may be taken only by a
 * process whose SO_PEERCRED its entry allows; anyone else is refused with
 * PROTO_E_CRED (-EACCES to the reducer) before any descriptor is sent, and
 * the refusal does not tell whether the id is busy.  As root, a child that
 * drops to another uid and gid is refused one id and welcomed to the id
 * made for it.
 *
 * The reducer: sivshm_reducer_open_checked() joins only a mapper whose
 * credentials it allows, and says nothing (no HELLO, no eventfd) to one
 * it does not.
 *
 * The parser of "ID:UID:GID;..." and "UID:GID" (the QEMU device's
 * properties): good strings give their values; 200000 random ones never
 * crash it, and bad ones are refused.
 */
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "client.h"
#include "sivshm.h"

#define OTHER_ID	65534	/* nobody, nogroup */

static char path[108];

/* A reducer join as @id, returning what sivshm_reducer_open says. */
static int join(uint32_t id)
{
	struct sivshm *r;
	int err = sivshm_reducer_open(&r, path, id, 1, 0, 2000);

	if (!err)
		sivshm_close(r);
	return err;
}

/* The same from a child running as OTHER_ID: its exit code is -err. */
static int join_as_other(uint32_t id)
{
	int status;
	pid_t pid = fork();

	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		if (setgroups(0, NULL) || setgid(OTHER_ID) || setuid(OTHER_ID))
			_exit(200);
		_exit(-join(id));
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) != 200,
		 "the child could not drop to uid %d", OTHER_ID);
	return -WEXITSTATUS(status);
}

static void mapper_side(void)
{
	struct sivshm_cred creds[4] = {
		[1] = { getuid(), SIVSHM_ANY_ID },
		[2] = { OTHER_ID, OTHER_ID },
		[3] = { SIVSHM_ANY_ID, getgid() + 1 },
	};
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "cred", .size = 1 << 20,
		.nreducers = 3, .nvectors = 1, .flags = SIVSHM_CHECK_CREDS,
		.creds = creds,
	};
	struct sivshm *mapper, *r1;

	opts.creds = NULL;
	T_EQ(sivshm_mapper_open(&mapper, &opts), -EINVAL);
	opts.creds = creds;
	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);

	T_EQ(join(1), 0);
	T_EQ(join(2), -EACCES);		/* another uid's id */
	T_EQ(join(3), -EACCES);		/* another gid's id */
	/* Refused before the id's state: busy or not, the same answer. */
	T_EQ(sivshm_reducer_open(&r1, path, 1, 1, 0, 2000), 0);
	T_EQ(join(2), -EACCES);
	T_EQ(join(1), -EADDRINUSE);
	sivshm_close(r1);
	puts("mapper: ids 2 and 3 refused to uid/gid not theirs");

	if (getuid() == 0) {
		/* Let the child connect: the socket's own mode is not tested. */
		T_EQ(chmod(path, 0666), 0);
		T_EQ(join_as_other(1), -EACCES);
		T_EQ(join_as_other(2), 0);
		printf("mapper: uid %d refused id 1, welcomed to id 2\n",
		       OTHER_ID);
	} else {
		puts("mapper: not root, the other-uid case is not run");
	}
	sivshm_close(mapper);
	unlink(path);
}

static void reducer_side(void)
{
	struct sivshm_mapper_opts opts = {
		.socket_path = path, .name = "cred", .size = 1 << 20,
		.nreducers = 1, .nvectors = 1,
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sivshm_cred me = { getuid(), getgid() };
	struct sivshm_cred other = { OTHER_ID, SIVSHM_ANY_ID };
	struct sivshm *mapper, *r;
	struct pollfd pfd;
	char buf[64];
	int lfd, conn;

	T_EQ(sivshm_mapper_open(&mapper, &opts), 0);
	T_EQ(sivshm_reducer_open_checked(&r, path, 1, 1, 0, 2000, &me), 0);
	sivshm_close(r);
	T_EQ(sivshm_reducer_open_checked(&r, path, 1, 1, 0, 2000, &other),
	     -EACCES);
	sivshm_close(mapper);
	unlink(path);

	/* A mapper not trusted hears nothing: the HELLO is never sent. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	T_ASSERT(lfd >= 0, "socket");
	T_EQ(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	T_EQ(listen(lfd, 1), 0);
	T_EQ(sivshm_reducer_open_checked(&r, path, 1, 1, 0, 2000, &other),
	     -EACCES);
	conn = accept(lfd, NULL, NULL);
	T_ASSERT(conn >= 0, "accept");
	pfd = (struct pollfd) { .fd = conn, .events = POLLIN };
	T_EQ(poll(&pfd, 1, 2000), 1);
	T_EQ(recv(conn, buf, sizeof(buf), 0), 0);	/* hung up, said nothing */
	close(conn);
	close(lfd);
	unlink(path);
	puts("reducer: joins only the mapper it trusts, tells others nothing");
}

static void parser(void)
{
	struct proto_cred allow[SIVSHM_MAX_REDUCERS + 1], c;
	const char *why;
	char s[40];
	unsigned int seed = 1;

	for (int j = 0; j < 5; j++)
		allow[j] = (struct proto_cred) { 7, 7 };
	T_EQ(proto_creds_parse("1:1000:1000;3:*:50", 4, allow, &why), 0);
	T_EQ(allow[1].uid, 1000);
	T_EQ(allow[1].gid, 1000);
	T_EQ(allow[2].uid, 7);			/* not named: unchanged */
	T_EQ(allow[3].uid, PROTO_CRED_ANY);
	T_EQ(allow[3].gid, 50);
	T_EQ(proto_cred_parse("0:*", &c), 0);
	T_EQ(c.uid, 0);
	T_EQ(c.gid, PROTO_CRED_ANY);
	{
		static const char *const bad[] = {
			"", "1", "1:2", "1:2:", "1:2:3;", "0:1:1", "5:1:1",
			"1:1:1;1:2:2", "*:1:1", "1:4294967295:1", "1:-1:1",
			"1:1:1 ", "1:99999999999:1", "1::1", ";1:1:1",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			T_ASSERT(proto_creds_parse(bad[i], 4, allow, &why) ==
				 -EINVAL, "\"%s\" was taken", bad[i]);
		T_EQ(proto_cred_parse("1:", &c), -EINVAL);
		T_EQ(proto_cred_parse("1:2:3", &c), -EINVAL);
	}
	/* Random strings of the alphabet that matters: no crash, no hang. */
	for (int n = 0; n < 200000; n++) {
		static const char abc[] = "0123456789:;*x ";
		int len = rand_r(&seed) % (sizeof(s) - 1);

		for (int i = 0; i < len; i++)
			s[i] = abc[rand_r(&seed) % (sizeof(abc) - 1)];
		s[len] = '\0';
		(void)proto_creds_parse(s, 63, allow, &why);
		(void)proto_cred_parse(s, &c);
	}
	puts("parser: good strings parsed, bad ones refused, 200000 random");
}

int main(void)
{
	snprintf(path, sizeof(path), "/tmp/sivshm-test-cred-%d.sock", getpid());
	parser();
	if (getuid() == OTHER_ID || getgid() == OTHER_ID)
		T_SKIP("running as uid %d gid %d: the ids this test takes for another user's",
		       (int)getuid(), (int)getgid());
	mapper_side();
	reducer_side();
	return 0;
}
