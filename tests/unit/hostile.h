/* SPDX-License-Identifier: MIT */
/*
 * A hostile peer on a mapper's socket: raw messages the protocol code would
 * never send, and the refusals they must get.  Used by the unit tests
 * against a library mapper and, from the host, against a mapper VM's QEMU.
 */
#ifndef TESTS_HOSTILE_H
#define TESTS_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

int raw_connect_to(const char *path);
void raw_send(int fd, const void *buf, size_t len, const int *fds,
	      unsigned int nfds);
void hello_bytes(uint8_t *buf, uint32_t id, uint32_t nvec);
void eventfds(int *fds, unsigned int n);
/* A memfd of @size bytes with @seals (0: none, and sealing allowed). */
int slot_memfd(uint64_t size, int seals);
/*
 * Expect a REFUSE with @code, then the mapper hanging up; close @fd.  Says
 * so on stdout, unless @what is NULL (one of a flood).
 */
void expect_refuse(int fd, uint32_t code, const char *what);

/*
 * Against the mapper at @path (nreducers, nvectors), with reducer @busy_id
 * connected and @free_id not (the checks after the id's need one): a
 * wrong version, the busy id, id 0, an id above N, a
 * truncated and an oversized HELLO, garbage, too few and too many fds,
 * pipes for eventfds, and a vector count mismatch are each refused with
 * the right code.  Exits through T_ASSERT on the first that is not.
 */
void hostile_refusals(const char *path, uint32_t nreducers, uint32_t nvectors,
		      uint32_t busy_id, uint32_t free_id);

/*
 * @count hostile messages, each on its own connection and each carrying
 * descriptors, cycling through every kind the mapper must drop: an empty
 * message, every refusal of hostile_refusals(), a HELLO whose sender hangs
 * up at once, and a message after a good WELCOME for @free_id (whose slot
 * must come sealed).  Each connection is followed until the mapper ends
 * it.
 */
#define HOSTILE_KINDS	15
void hostile_flood(const char *path, uint32_t nreducers, uint32_t nvectors,
		   uint32_t busy_id, uint32_t free_id, unsigned int count);

/* This process's open descriptors and resident set, from /proc/self. */
int open_fd_count(void);
long rss_kib(void);

#endif
