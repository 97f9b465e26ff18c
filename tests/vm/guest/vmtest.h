/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for programs that run inside a test guest.  Their assertions are
 * check.h's: a failed one carries its file and line back to the host in the
 * test's output, as the KVM selftests' GUEST_ASSERT does.
 */
#ifndef VMTEST_H
#define VMTEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* A sysfs attribute in hex (a PCI vendor or device id), 0 if unreadable. */
static inline unsigned long vm_sysfs_hex(const char *dir, const char *file)
{
	char path[1024], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoul(buf, NULL, 16);
}

/* The sysfs directory of the first PCI device @vendor:@device, in @dir. */
static inline void vm_find_pci(unsigned long vendor, unsigned long device,
			       char *dir, size_t len)
{
	const char *base = "/sys/bus/pci/devices";
	DIR *d = opendir(base);
	struct dirent *de;
	char path[512];

	T_ASSERT(d, "%s", base);
	dir[0] = '\0';
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
		if (vm_sysfs_hex(path, "vendor") == vendor &&
		    vm_sysfs_hex(path, "device") == device) {
			snprintf(dir, len, "%s", path);
			break;
		}
	}
	closedir(d);
	T_ASSERT(dir[0], "no PCI device %04lx:%04lx in this guest", vendor,
		  device);
}

#endif
