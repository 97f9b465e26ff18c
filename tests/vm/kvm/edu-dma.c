// SPDX-License-Identifier: MIT
/*
 * edu-dma: one DMA write by QEMU's edu device, the attacker's device of
 * the nested DMA tests, into the VM edu is confined to (IOVA = the VM's
 * guest-physical address):
 *
 *   edu-dma GPA [LEN]
 *
 * writes LEN bytes (default 256) of edu's buffer, which nothing has
 * filled (zeros), at GPA.  edu finishes the command whether or not the
 * IOMMU let the bytes through: whether they landed is for the test to
 * see, in the VM and in level 1's DMAR fault log.
 */
#include <inttypes.h>

#include "edu.h"
#include "kvmtest.h"

int main(int argc, char **argv)
{
	uint64_t gpa, len = 256;

	T_ASSERT(argc == 2 || argc == 3, "usage: edu-dma GPA [LEN]");
	gpa = strtoull(argv[1], NULL, 0);
	if (argc == 3)
		len = strtoull(argv[2], NULL, 0);
	T_ASSERT(len && len <= EDU_BUF_SIZE, "LEN %" PRIu64, len);
	edu_setup();
	edu_dma(EDU_BUF, gpa, len, true);
	printf("edu-dma: edu %s wrote %" PRIu64 " bytes at 0x%" PRIx64 "\n",
	       edu_name, len, gpa);
	return 0;
}
