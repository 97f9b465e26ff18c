/* SPDX-License-Identifier: MIT */
/*
 * charcount, the papers' workload: the mapper stripes its input across the
 * reducers' slots in slot-sized rounds; each reducer counts the occurrences
 * of one byte in its slot and answers through its mailbox.
 *
 * Mailbox words (struct sivshm_mbox at the start of each reducer slot):
 *	req[0]	command: CC_COUNT or CC_EXIT
 *	req[1]	bytes of data in the slot, from offset SIVSHM_MBOX_SIZE
 *	req[2]	the byte to count
 *	resp[0]	the count
 * Interrupt mode rings vector 0 both ways after each post; polling mode
 * only spins on the mailbox.
 */
#ifndef CHARCOUNT_H
#define CHARCOUNT_H

#include <stddef.h>
#include <stdint.h>

#define CC_COUNT	1
#define CC_EXIT		2
#define CC_VECTOR	0
#define CC_NVECTORS	1

static inline uint64_t cc_count(const uint8_t *p, size_t len, uint8_t c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += p[i] == c;
	return n;
}

#endif
