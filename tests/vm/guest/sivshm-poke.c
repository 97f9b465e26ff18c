// SPDX-License-Identifier: GPL-2.0
/*
 * Inside a test guest with a sivshm device:
 *
 *   sivshm-poke mark                 mapper: write each slot's markers
 *   sivshm-poke isolation TIMEOUT_MS reducer: wait for our own markers, then
 *                                    look for any other slot's through every
 *                                    path a guest has (the driver's mmap,
 *                                    BAR1 through sysfs, /dev/mem)
 *   sivshm-poke fuzz SECONDS SEED    write random values to every BAR0 offset
 *                                    (the doorbell included), any width
 *   sivshm-poke check-marks          mapper: every slot still has its markers
 *   sivshm-poke wait-request TIMEOUT_MS
 *                                    reducer: wait until the mapper has posted
 *                                    a request in our mailbox, say so, and
 *                                    hang there (a reducer that dies mid-job)
 *   sivshm-poke wait-peers MASK TIMEOUT_MS
 *                                    wait until the connected peers are
 *                                    exactly MASK (bit j for reducer j)
 *   sivshm-poke wait-mapper TIMEOUT_MS
 *                                    reducer started before its mapper: no
 *                                    peer yet; block until an interrupt (the
 *                                    peer change), then the mapper is there
 *                                    and our slot takes "reducer <id> was
 *                                    first" at its start
 *   sivshm-poke unplug DEV CYCLES TIMEOUT_MS
 *                                    CYCLES times: wait for DEV, open and map
 *                                    it, block a read() in a child, print
 *                                    "unplug-ready <n>", and once the device
 *                                    is unplugged check what the open file
 *                                    gives: -ENODEV from ioctl, mmap and the
 *                                    blocked read, EPOLLHUP, and SIGBUS from
 *                                    the old mapping
 *
 * The markers are "SIVSHM-MARKER-slot<j>" at four offsets of slot j.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/sivshm.h>

#include "sivshm-regs.h"
#include "vmtest.h"

#define MARKER	"SIVSHM-MARKER-slot"

static char sysdir[512];

static void find_device(void)
{
	vm_find_pci(SIVSHM_PCI_VENDOR_ID, SIVSHM_PCI_DEVICE_ID, sysdir,
		    sizeof(sysdir));
}

/* Map a whole BAR through sysfs. */
static void *map_bar(int bar, size_t *len, uint64_t *phys)
{
	char path[600], line[128];
	struct stat st;
	void *p;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/resource%d", sysdir, bar);
	fd = open(path, O_RDWR | O_SYNC);
	T_ASSERT(fd >= 0, "%s", path);
	T_ASSERT(fstat(fd, &st) == 0, "%s", path);
	*len = st.st_size;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_ASSERT(p != MAP_FAILED, "%s", path);
	close(fd);
	if (phys) {
		snprintf(path, sizeof(path), "%s/resource", sysdir);
		f = fopen(path, "r");
		T_ASSERT(f, "%s", path);
		for (int i = 0; i <= bar; i++)
			T_ASSERT(fgets(line, sizeof(line), f), "resource");
		fclose(f);
		*phys = strtoull(line, NULL, 16);
	}
	return p;
}

static int dev_open(struct sivshm_dev_info *info)
{
	int fd = open("/dev/sivshm0", O_RDWR);

	T_ASSERT(fd >= 0, "/dev/sivshm0");
	T_ASSERT(ioctl(fd, SIVSHM_IOC_INFO, info) == 0, "INFO");
	return fd;
}

static void marker(char *buf, size_t len, uint32_t j)
{
	snprintf(buf, len, MARKER "%u", j);
}

static uint8_t *map_all(struct sivshm_dev_info *info, int prot)
{
	int fd = dev_open(info);
	uint8_t *mem = mmap(NULL, info->mappable, prot, MAP_SHARED, fd, 0);

	T_ASSERT(mem != MAP_FAILED, "mmap");
	return mem;
}

static int check_marks(void)
{
	struct sivshm_dev_info info;
	uint8_t *mem = map_all(&info, PROT_READ);
	char m[64];

	T_ASSERT(info.role == SIVSHM_ROLE_MAPPER, "not the mapper");
	for (uint32_t j = 0; j <= info.nreducers; j++) {
		marker(m, sizeof(m), j);
		for (int k = 0; k < 4; k++)
			T_ASSERT(!strcmp((char *)mem + j * info.slice_size +
					 k * (info.slice_size / 4), m),
				 "slot %u lost marker %d", j, k);
	}
	printf("all %u slots kept their markers\n", info.nreducers + 1);
	return 0;
}

static int wait_request(int timeout_ms)
{
	struct sivshm_dev_info info;
	volatile uint64_t *req_seq = (uint64_t *)map_all(&info, PROT_READ);

	for (int t = 0; !*req_seq; t += 10) {
		T_ASSERT(t < timeout_ms, "no request came");
		usleep(10000);
	}
	printf("request %llu pending\n", (unsigned long long)*req_seq);
	fflush(stdout);
	for (;;)
		pause();
}

static int wait_mapper(int timeout_ms)
{
	struct sivshm_dev_info info;
	struct pollfd pfd;
	uint64_t count;
	char *mem;
	int fd = dev_open(&info);

	T_ASSERT(info.role == SIVSHM_ROLE_REDUCER, "not a reducer");
	T_ASSERT(!(info.peers & 1), "the mapper is there already");
	pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
	T_ASSERT(poll(&pfd, 1, timeout_ms) == 1, "no interrupt came");
	T_ASSERT(read(fd, &count, sizeof(count)) == sizeof(count),
		 "read");
	T_ASSERT(ioctl(fd, SIVSHM_IOC_INFO, &info) == 0, "INFO");
	T_ASSERT(info.peers & 1, "an interrupt, but no mapper (peers %#llx)",
		 (unsigned long long)info.peers);
	mem = mmap(NULL, info.mappable, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	T_ASSERT(mem != MAP_FAILED, "mmap");
	snprintf(mem, 64, "reducer %u was first", info.id);
	printf("the mapper came: %llu interrupt(s), peers %#llx\n",
	       (unsigned long long)count, (unsigned long long)info.peers);
	munmap(mem, info.mappable);
	close(fd);
	return 0;
}

static int wait_peers(uint64_t mask, int timeout_ms)
{
	struct sivshm_dev_info info;
	int fd = open("/dev/sivshm0", O_RDWR);

	T_ASSERT(fd >= 0, "/dev/sivshm0");
	for (int t = 0;; t += 10) {
		T_ASSERT(ioctl(fd, SIVSHM_IOC_INFO, &info) == 0, "INFO");
		if (info.peers == mask)
			break;
		T_ASSERT(t < timeout_ms, "peers %#llx, never %#llx",
			 (unsigned long long)info.peers,
			 (unsigned long long)mask);
		usleep(10000);
	}
	printf("peers %#llx\n", (unsigned long long)mask);
	close(fd);
	return 0;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* Whether touching @p raises SIGBUS. */
static int sigbus_on(volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int bus = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		bus = 1;
	else
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

static void unplug_once(const char *dev, int n, int timeout_ms)
{
	struct sivshm_dev_info info;
	struct pollfd pfd;
	uint8_t *mem;
	pid_t reader;
	int fd, t, status;
	uint64_t count;

	for (t = 0; (fd = open(dev, O_RDWR)) < 0; t += 10) {
		T_ASSERT(t < timeout_ms, "%s never came", dev);
		usleep(10000);
	}
	T_ASSERT(ioctl(fd, SIVSHM_IOC_INFO, &info) == 0, "INFO");
	mem = mmap(NULL, info.mappable, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	T_ASSERT(mem != MAP_FAILED, "mmap");
	mem[0] = (uint8_t)n;
	reader = fork();
	T_ASSERT(reader >= 0, "fork");
	if (!reader) {	/* blocked in read() whenever no interrupt came */
		while (read(fd, &count, sizeof(count)) == sizeof(count))
			;
		_exit(errno == ENODEV ? 0 : 1);
	}
	printf("unplug-ready %d\n", n);
	fflush(stdout);

	for (t = 0; ioctl(fd, SIVSHM_IOC_INFO, &info) == 0; t += 10) {
		T_ASSERT(t < timeout_ms, "%s was never unplugged", dev);
		usleep(10000);
	}
	T_ASSERT(errno == ENODEV, "INFO after unplug: %s", strerror(errno));
	T_ASSERT(waitpid(reader, &status, 0) == reader, "waitpid");
	T_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "the blocked read did not end in ENODEV (status %#x)",
		 status);
	pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
	T_ASSERT(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP),
		 "poll after unplug: %#x", pfd.revents);
	T_ASSERT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) ==
		 MAP_FAILED && errno == ENODEV, "mmap after unplug");
	T_ASSERT(sigbus_on(mem), "the old mapping still reaches memory");
	T_ASSERT(sigbus_on(mem + info.mappable - 1), "its end does too");
	munmap(mem, info.mappable);
	close(fd);
	printf("unplug %d: ENODEV from ioctl, read and mmap, POLLHUP, SIGBUS "
	       "from the mapping\n", n);
	fflush(stdout);
}

static int mark(void)
{
	struct sivshm_dev_info info;
	uint8_t *mem = map_all(&info, PROT_READ | PROT_WRITE);
	char m[64];

	T_ASSERT(info.role == SIVSHM_ROLE_MAPPER, "not the mapper");
	for (uint32_t j = 0; j <= info.nreducers; j++) {
		marker(m, sizeof(m), j);
		for (int k = 0; k < 4; k++)
			memcpy(mem + j * info.slice_size +
			       k * (info.slice_size / 4), m, strlen(m) + 1);
	}
	__sync_synchronize();
	printf("marked %u slots of %llu bytes\n", info.nreducers + 1,
	       (unsigned long long)info.slice_size);
	return 0;
}

/* Count markers of slot @own, fail on any other slot's. */
static int scan(const volatile uint8_t *p, size_t len, uint32_t own,
		const char *what)
{
	size_t mlen = strlen(MARKER);
	int found = 0;

	for (size_t off = 0; off + mlen + 2 <= len; off += 4096) {
		char buf[32];

		for (size_t i = 0; i < sizeof(buf) - 1; i++)
			buf[i] = off + i < len ? p[off + i] : 0;
		buf[sizeof(buf) - 1] = 0;
		if (strncmp(buf, MARKER, mlen))
			continue;
		T_ASSERT(strtoul(buf + mlen, NULL, 10) == own,
			 "%s: %s at offset %zu", what, buf, off);
		found++;
	}
	return found;
}

static int isolation(int timeout_ms)
{
	struct sivshm_dev_info info;
	int fd = dev_open(&info), mem_fd, found = 0;
	uint64_t phys;
	size_t bar_len;
	uint8_t *mem, *bar;
	char m[64];

	T_ASSERT(info.role == SIVSHM_ROLE_REDUCER, "not a reducer");
	T_ASSERT(info.mappable == info.slice_size,
		 "a reducer may map %llu bytes, its slice is %llu",
		 (unsigned long long)info.mappable,
		 (unsigned long long)info.slice_size);
	mem = mmap(NULL, info.mappable, PROT_READ, MAP_SHARED, fd, 0);
	T_ASSERT(mem != MAP_FAILED, "mmap");

	/*
	 * Wait for the mapper's markers in our slot: for its last one, since
	 * the mapper, in another VM, may still be writing the others when
	 * the first shows (x86 keeps its stores in order).
	 */
	marker(m, sizeof(m), info.id);
	for (int t = 0; strcmp((char *)mem + 3 * (info.slice_size / 4), m);
	     t += 10) {
		T_ASSERT(t < timeout_ms, "no marker in our slot");
		usleep(10000);
	}

	/* 1. the driver's mapping, and no mapping past the slice */
	T_ASSERT(scan(mem, info.mappable, info.id, "mmap") == 4,
		 "own markers missing");
	T_ASSERT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		      info.slice_size) == MAP_FAILED && errno == EINVAL,
		 "mmap past the slice did not fail with EINVAL");
	T_ASSERT(mmap(NULL, 2 * info.slice_size, PROT_READ, MAP_SHARED, fd,
		      0) == MAP_FAILED && errno == EINVAL,
		 "mmap of twice the slice did not fail with EINVAL");
	T_ASSERT(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		      1ULL << 40) == MAP_FAILED && errno == EINVAL,
		 "mmap at a huge offset did not fail with EINVAL");

	/* 2. the whole BAR1 container through sysfs */
	bar = map_bar(SIVSHM_BAR_MEM, &bar_len, &phys);
	found = scan(bar, bar_len, info.id, "BAR1");
	T_ASSERT(found == 4, "BAR1 shows %d own markers", found);
	printf("BAR1: %zu bytes, slice %llu: only our own markers\n", bar_len,
	       (unsigned long long)info.slice_size);

	/* 3. /dev/mem over the same physical range, where it allows it */
	mem_fd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (mem_fd >= 0) {
		uint8_t *dm = mmap(NULL, bar_len, PROT_READ, MAP_SHARED,
				   mem_fd, phys);

		if (dm != MAP_FAILED) {
			scan(dm, bar_len, info.id, "/dev/mem");
			printf("/dev/mem: only our own markers\n");
		} else {
			printf("/dev/mem: mapping refused (%s)\n",
			       strerror(errno));
		}
	}
	return 0;
}

static int fuzz(int seconds, unsigned int seed)
{
	size_t len;
	volatile uint8_t *regs = map_bar(SIVSHM_BAR_REGS, &len, NULL);
	time_t end = time(NULL) + seconds;
	unsigned long n = 0;

	srandom(seed);
	while (time(NULL) < end) {
		uint32_t off = random() % len, val = random();

		switch (random() % 4) {
		case 0:
			*(volatile uint8_t *)(regs + off) = val;
			break;
		case 1:
			*(volatile uint16_t *)(regs + (off & ~1u)) = val;
			break;
		case 2:
			*(volatile uint32_t *)(regs + (off & ~3u)) = val;
			break;
		case 3:
			/* The doorbell with any peer and vector. */
			*(volatile uint32_t *)(regs + SIVSHM_REG_DOORBELL) = val;
			break;
		}
		(void)*(volatile uint32_t *)(regs + (random() % len & ~3u));
		n++;
	}
	printf("fuzz: %lu random accesses to BAR0 in %d s\n", n, seconds);
	return 0;
}

int main(int argc, char **argv)
{
	T_ASSERT(argc >= 2, "usage: sivshm-poke mark|isolation|fuzz ...");
	find_device();
	if (!strcmp(argv[1], "mark"))
		return mark();
	if (!strcmp(argv[1], "isolation") && argc == 3)
		return isolation(atoi(argv[2]));
	if (!strcmp(argv[1], "check-marks"))
		return check_marks();
	if (!strcmp(argv[1], "wait-request") && argc == 3)
		return wait_request(atoi(argv[2]));
	if (!strcmp(argv[1], "wait-peers") && argc == 4)
		return wait_peers(strtoull(argv[2], NULL, 0), atoi(argv[3]));
	if (!strcmp(argv[1], "wait-mapper") && argc == 3)
		return wait_mapper(atoi(argv[2]));
	if (!strcmp(argv[1], "unplug") && argc == 5) {
		for (int n = 1; n <= atoi(argv[3]); n++)
			unplug_once(argv[2], n, atoi(argv[4]));
		return 0;
	}
	if (!strcmp(argv[1], "fuzz") && argc == 4)
		return fuzz(atoi(argv[2]), strtoul(argv[3], NULL, 0));
	T_ASSERT(0, "unknown command %s", argv[1]);
}
