/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * The ABI of /dev/sivshmN, the guest driver of the QEMU sivshm device.
 * Shared by guest-modules/sivshm and libsivshm's guest backend.
 *
 * mmap() of the device maps BAR1 write-back: the whole region for the
 * mapper, the VM's own slice for a reducer; offset and length must stay
 * within info.mappable.  read() returns the number of interrupts (__u64)
 * received since the last read() on this file, blocking until there is at
 * least one (or -EAGAIN with O_NONBLOCK); poll() reports POLLIN then.
 *
 * Once the device is removed (unplugged, unbound, the driver unloaded), a
 * file still open gets -ENODEV from ioctl(), mmap() and read() (a blocked
 * read() returns it), EPOLLHUP|EPOLLERR from poll(), and SIGBUS from any
 * mapping it made: the mappings are zapped on remove.
 */
#ifndef _UAPI_LINUX_SIVSHM_H
#define _UAPI_LINUX_SIVSHM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SIVSHM_ROLE_MAPPER	0
#define SIVSHM_ROLE_REDUCER	1

struct sivshm_dev_info {
	__u32 id;		/* 0 for the mapper */
	__u32 role;		/* SIVSHM_ROLE_* */
	__u32 nreducers;
	__u32 nvectors;		/* doorbell vectors */
	__u64 slice_size;
	__u64 mappable;		/* bytes mmap() reaches */
	__u64 peers;		/* connected peers, bit per id */
};

struct sivshm_doorbell {
	__u32 peer;		/* mapper: a reducer id; reducer: 0 */
	__u32 vector;
};

struct sivshm_irqfd {
	__s32 fd;		/* an eventfd, or -1 to unbind */
	__u32 vector;		/* doorbell vector, or nvectors for peer changes */
};

struct sivshm_signal {
	__u32 signo;		/* SIGUSR1, or 0 to stop */
	__u32 vector_mask;	/* the vectors that signal this task */
};

#define SIVSHM_IOC_MAGIC	'S'
#define SIVSHM_IOC_INFO		_IOR(SIVSHM_IOC_MAGIC, 0x00, struct sivshm_dev_info)
#define SIVSHM_IOC_NOTIFY	_IOW(SIVSHM_IOC_MAGIC, 0x01, struct sivshm_doorbell)
#define SIVSHM_IOC_SET_EVENTFD	_IOW(SIVSHM_IOC_MAGIC, 0x02, struct sivshm_irqfd)
#define SIVSHM_IOC_SET_SIGNAL	_IOW(SIVSHM_IOC_MAGIC, 0x03, struct sivshm_signal)

#endif /* _UAPI_LINUX_SIVSHM_H */
