// SPDX-License-Identifier: GPL-2.0
/*
 * pt-kexec KERNEL INITRD CMDLINE: load KERNEL with INITRD and CMDLINE
 * through kexec_file_load(2) and reboot into it (LINUX_REBOOT_CMD_KEXEC),
 * as `kexec -s -l` then `kexec -e` do: the devices' shutdown methods run,
 * then the new kernel, with no firmware in between.  Returns only if it
 * failed.
 */
#include <fcntl.h>
#include <linux/reboot.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vmtest.h"

int main(int argc, char **argv)
{
	int kernel, initrd;

	T_ASSERT(argc == 4, "usage: pt-kexec KERNEL INITRD CMDLINE");
	kernel = open(argv[1], O_RDONLY);
	T_ASSERT(kernel >= 0, "%s", argv[1]);
	initrd = open(argv[2], O_RDONLY);
	T_ASSERT(initrd >= 0, "%s", argv[2]);
	T_ASSERT(!syscall(SYS_kexec_file_load, kernel, initrd,
			  strlen(argv[3]) + 1, argv[3], 0UL),
		 "kexec_file_load");
	sync();
	T_ASSERT(!reboot(LINUX_REBOOT_CMD_KEXEC), "reboot into the new kernel");
	return 1;
}
