// SPDX-License-Identifier: MIT
/* QEMU's edu device from level-1 user space: edu.h. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "edu.h"
#include "kvmtest.h"

char edu_name[32];
struct kvm_pagetype_dma_device edu;
static volatile uint64_t *edu_regs;

static int read_sysfs_hex(const char *dev, const char *attr, unsigned int *v)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), SYSPCI "/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%x", v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

bool has_driver(const char *dev)
{
	char path[256];

	snprintf(path, sizeof(path), SYSPCI "/%s/driver", dev);
	return access(path, F_OK) == 0;
}

int group_size(const char *dev)
{
	char path[256];
	struct dirent *d;
	int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), SYSPCI "/%s/iommu_group/devices", dev);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

bool find_device(int want, char *name, size_t len)
{
	unsigned int vendor, device;
	struct dirent *d;
	bool found = false;
	DIR *dir;

	dir = opendir(SYSPCI);
	T_ASSERT(dir, "opendir " SYSPCI);
	while (!found && (d = readdir(dir))) {
		if (d->d_name[0] == '.' ||
		    read_sysfs_hex(d->d_name, "vendor", &vendor) ||
		    read_sysfs_hex(d->d_name, "device", &device))
			continue;
		if (want == 0)
			found = vendor == EDU_VENDOR && device == EDU_DEVICE;
		else if (want == 1)
			found = group_size(d->d_name) > 1;
		else if (want == 3)
			found = group_size(d->d_name) == 1 &&
				!read_sysfs_hex(d->d_name, "class", &device) &&
				device >> 8 == 0x0604;	/* PCI-to-PCI bridge */
		else
			found = group_size(d->d_name) == 1 &&
				has_driver(d->d_name);
		if (found)
			snprintf(name, len, "%.*s", (int)len - 1, d->d_name);
	}
	closedir(dir);
	return found;
}

/* edu's PCI command register, through sysfs config. */
static uint16_t edu_command(int set)
{
	char path[256];
	uint16_t cmd;
	int fd;

	snprintf(path, sizeof(path), SYSPCI "/%s/config", edu_name);
	fd = open(path, O_RDWR);
	T_ASSERT(fd >= 0, "open %s", path);
	T_EQ(pread(fd, &cmd, 2, PCI_COMMAND_REG), 2);
	if (set) {
		cmd |= set;
		T_EQ(pwrite(fd, &cmd, 2, PCI_COMMAND_REG), 2);
	}
	close(fd);
	return cmd;
}

void edu_bus_master(void)
{
	edu_command(PCI_CMD_MEMORY | PCI_CMD_MASTER);
}

bool edu_is_master(void)
{
	return edu_command(0) & PCI_CMD_MASTER;
}

void edu_setup(void)
{
	char path[256];
	void *bar;
	int fd;

	T_ASSERT(find_device(0, edu_name, sizeof(edu_name)), "no edu device");
	T_ASSERT(!has_driver(edu_name), "edu %s has a driver", edu_name);
	T_EQ(group_size(edu_name), 1);
	edu = kt_pci_addr(edu_name);
	edu_bus_master();

	snprintf(path, sizeof(path), SYSPCI "/%s/resource0", edu_name);
	fd = open(path, O_RDWR | O_SYNC);
	T_ASSERT(fd >= 0, "open %s", path);
	bar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(bar != MAP_FAILED, "mmap %s", path);
	close(fd);
	edu_regs = bar;
	/* The ID register, 0x010000ed (registers below 0x80: 4 bytes). */
	T_EQ(*(volatile uint32_t *)bar & 0xffff, 0xed);
}

void edu_dma(uint64_t src, uint64_t dst, uint32_t len, bool to_ram)
{
	T_ASSERT(len <= EDU_BUF_SIZE, "edu transfer of %u bytes", len);
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i;

	edu_regs[EDU_DMA_SRC / 8] = src;
	edu_regs[EDU_DMA_DST / 8] = dst;
	edu_regs[EDU_DMA_CNT / 8] = len;
	edu_regs[EDU_DMA_CMD / 8] = EDU_CMD_RUN | (to_ram ? EDU_CMD_TO_RAM : 0);
	for (i = 0; i < 1000 && (edu_regs[EDU_DMA_CMD / 8] & EDU_CMD_RUN); i++)
		nanosleep(&ts, NULL);
	T_ASSERT(!(edu_regs[EDU_DMA_CMD / 8] & EDU_CMD_RUN),
		 "edu DMA still running after 10 s");
}
