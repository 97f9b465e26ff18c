/* SPDX-License-Identifier: MIT */
/* The handshake's descriptor utilities: slot fds, eventfds. */
#ifndef SIVSHM_FDS_H
#define SIVSHM_FDS_H

#include <fcntl.h>
#include <stdint.h>

/*
 * The seals of every slot fd a mapper hands out, and of every slot it takes
 * back: no shrinking, no growing, no further seal (no write seal either).
 */
#define PROTO_SLOT_SEALS	(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/*
 * Whether @fd may stand for a slot whose fd today is @like: a file of @size
 * bytes sealed with exactly PROTO_SLOT_SEALS and, unless @like is -1, on a
 * file system of the same type and block size (so huge pages stay huge
 * pages).  0 or -errno, with *@why said.
 */
int proto_slot_check(int fd, int like, uint64_t size, const char **why);

/* Whether @fd is an eventfd. */
int proto_fd_is_eventfd(int fd);

/* Close the fds of @fds that are open (>= 0), and set each to -1. */
void proto_close_fds(int *fds, unsigned int nfds);

#endif
