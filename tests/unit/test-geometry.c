// SPDX-License-Identifier: MIT
/* Slice arithmetic at its edges. */
#include "check.h"
#include "geometry.h"

#define PAGE 4096u

static void ok(uint64_t total, uint32_t n, uint64_t slice)
{
	struct sivshm_geometry g;

	T_EQ(sivshm_geometry_init(&g, total, n, PAGE), 0);
	T_EQ(g.slice_size, slice);
	T_EQ(g.region_size, slice * (n + 1));
	T_EQ(g.nreducers, n);
	T_ASSERT(g.region_size <= total, "region exceeds the total");
	for (uint32_t j = 0; j <= n; j++)
		T_EQ(sivshm_slot_offset(&g, j), (uint64_t)j * slice);
}

static void bad(uint64_t total, uint32_t n, uint32_t page)
{
	struct sivshm_geometry g;

	T_EQ(sivshm_geometry_init(&g, total, n, page), -EINVAL);
}

int main(void)
{
	/* The papers' 1 GiB region, 3 reducers: 256 MiB each. */
	ok(1ULL << 30, 3, 256ULL << 20);
	/* Rounded down to a page: 1 GiB / 32 slots. */
	ok(1ULL << 30, 31, 32ULL << 20);
	ok((1ULL << 30) + 5, 31, 32ULL << 20);
	/* 1 GiB / 3 slots is not a page multiple. */
	ok(1ULL << 30, 2, ((1ULL << 30) / 3) & ~(uint64_t)(PAGE - 1));
	/* Exactly one page per slot, and one byte short of it. */
	ok(2 * PAGE, 1, PAGE);
	bad(2 * PAGE - 1, 1, PAGE);
	ok(64ULL * PAGE, 63, PAGE);
	bad(64ULL * PAGE - 1, 63, PAGE);
	/* Reducer count limits. */
	bad(1ULL << 30, 0, PAGE);
	ok(1ULL << 30, 63, ((1ULL << 30) / 64));
	bad(1ULL << 30, 64, PAGE);
	bad(1ULL << 30, UINT32_MAX, PAGE);
	/* Size limits: the maximum, one past it, and overflowing values. */
	ok(SIVSHM_MAX_REGION, 1, SIVSHM_MAX_REGION / 2);
	bad(SIVSHM_MAX_REGION + 1, 1, PAGE);
	bad(UINT64_MAX, 63, PAGE);
	bad(0, 1, PAGE);
	/* Page sizes: hugetlbfs's 2 MiB works, a non power of two does not. */
	{
		struct sivshm_geometry g;

		T_EQ(sivshm_geometry_init(&g, 1ULL << 30, 31, 2u << 20), 0);
		T_EQ(g.slice_size, 32ULL << 20);
		T_EQ(sivshm_geometry_init(&g, 1ULL << 30, 63, 2u << 20), 0);
		T_EQ(g.slice_size, 16ULL << 20);
	}
	bad(1ULL << 30, 3, 0);
	bad(1ULL << 30, 3, 3000);
	puts("geometry: all edges hold");
	return 0;
}
