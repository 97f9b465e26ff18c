/* SPDX-License-Identifier: MIT */
/*
 * What kvm-pagetype/pt_rules.c takes from the kernel, in user space: the
 * unit tests build the same file with this header in place of the
 * kernel's.
 */
#ifndef TESTS_UNIT_PT_USER_H
#define TESTS_UNIT_PT_USER_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define BIT_ULL(n)		(1ULL << (n))
#define GENMASK_ULL(h, l)	((~0ULL << (l)) & (~0ULL >> (63 - (h))))

struct pt_mutex {
	pthread_mutex_t m;
};

#define pt_mutex_init(x)	pthread_mutex_init(&(x)->m, NULL)
#define pt_mutex_destroy(x)	pthread_mutex_destroy(&(x)->m)
#define pt_mutex_lock(x)	pthread_mutex_lock(&(x)->m)
#define pt_mutex_unlock(x)	pthread_mutex_unlock(&(x)->m)
#define pt_calloc(n, size)	calloc(n, size)
#define pt_cfree(p)		free(p)
#define pt_page_alloc()		malloc(4096)
#define pt_page_free(p)		free(p)
#define pt_cond_resched()	do { } while (0)
#define pt_read_racy(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define swap(a, b) \
	do { __typeof__(a) __tmp = (a); (a) = (b); (b) = __tmp; } while (0)

#endif /* TESTS_UNIT_PT_USER_H */
