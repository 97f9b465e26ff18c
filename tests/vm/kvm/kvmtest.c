// SPDX-License-Identifier: MIT
/* See kvmtest.h. */
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvmtest.h"

#define PORT_STORE	0x10
#define PORT_LOAD	0x11

/*
 * The guest's code, at frame KT_CODE_GFN:
 *   0x00: mov [rdi], rsi; out 0x10, al; hlt
 *   0x10: mov [rdi], esi; out 0x10, al; hlt
 *   0x20: mov rax, [rdi]; out 0x11, al; hlt
 *   0x30: lgdt [rsi]; sgdt [rdi]; out 0x10, al; hlt
 *   0x40: lidt [rsi]; sidt [rdi]; out 0x10, al; hlt
 *   0x50: pshufb xmm0, [rdi]; out 0x11, al; hlt
 */
static const uint8_t guest_code[] = {
	[0x00] = 0x48, 0x89, 0x37, 0xe6, PORT_STORE, 0xf4,
	[0x10] = 0x89, 0x37, 0xe6, PORT_STORE, 0xf4,
	[0x20] = 0x48, 0x8b, 0x07, 0xe6, PORT_LOAD, 0xf4,
	[0x30] = 0x0f, 0x01, 0x16, 0x0f, 0x01, 0x07, 0xe6, PORT_STORE, 0xf4,
	[0x40] = 0x0f, 0x01, 0x1e, 0x0f, 0x01, 0x0f, 0xe6, PORT_STORE, 0xf4,
	[0x50] = 0x66, 0x0f, 0x38, 0x00, 0x07, 0xe6, PORT_LOAD, 0xf4,
};

uint64_t *kt_frame(struct kt_vm *vm, uint64_t gfn)
{
	T_ASSERT(gfn * KT_PAGE < vm->mem_size, "frame %#llx",
		 (unsigned long long)gfn);
	return (uint64_t *)(vm->mem + gfn * KT_PAGE);
}

static void layout(struct kt_vm *vm)
{
	uint64_t *l4 = kt_frame(vm, KT_L4_GFN);
	uint64_t *kl2 = kt_frame(vm, KT_KL2_GFN);
	uint64_t i;

	l4[0] = kt_pte(KT_UL3_GFN, KT_RW);
	kt_frame(vm, KT_UL3_GFN)[0] = kt_pte(KT_UL2_GFN, KT_RW);
	kt_frame(vm, KT_UL2_GFN)[0] = kt_pte(KT_UL1_GFN, KT_RW);
	/* User half: code read-only, free frames writable up to 1 MiB. */
	kt_frame(vm, KT_UL1_GFN)[KT_CODE_GFN] = kt_pte(KT_CODE_GFN, 0);
	for (i = KT_FREE_GFN; i < 256 && i * KT_PAGE < vm->mem_size; i++)
		kt_frame(vm, KT_UL1_GFN)[i] = kt_pte(i, KT_RW);

	l4[256] = kt_pte(KT_KL3_GFN, KT_RW);
	kt_frame(vm, KT_KL3_GFN)[0] = kt_pte(KT_KL2_GFN, KT_RW);
	for (i = 0; i * (2ULL << 20) < vm->mem_size && i < 512; i++)
		kl2[i] = kt_pte(i * 512, KT_RW | KT_PS);
	memcpy(kt_frame(vm, KT_CODE_GFN), guest_code, sizeof(guest_code));
}

static void long_mode(int vcpu_fd)
{
	struct kvm_sregs s;
	struct kvm_segment seg = {
		.base = 0, .limit = 0xffffffff, .present = 1, .s = 1, .g = 1,
	};

	T_ASSERT(!ioctl(vcpu_fd, KVM_GET_SREGS, &s), "KVM_GET_SREGS");
	s.cr0 = 0x80050033;		/* PG WP NE ET MP PE */
	s.cr3 = KT_L4_GFN * KT_PAGE;
	s.cr4 = 0x220;			/* OSFXSR (SSE) PAE */
	s.efer = 0xd00;			/* NXE LMA LME */
	seg.type = 11;			/* code: execute, read, accessed */
	seg.l = 1;
	seg.selector = 0x8;
	s.cs = seg;
	seg.type = 3;			/* data: read, write, accessed */
	seg.l = 0;
	seg.db = 1;
	seg.selector = 0x10;
	s.ds = s.es = s.fs = s.gs = s.ss = seg;
	seg.type = 11;			/* busy 64-bit TSS */
	seg.s = 0;
	seg.db = 0;
	seg.limit = 0x67;
	seg.selector = 0x18;
	s.tr = seg;
	T_ASSERT(!ioctl(vcpu_fd, KVM_SET_SREGS, &s), "KVM_SET_SREGS");
}

void kt_vm_create(struct kt_vm *vm, uint64_t mem_size)
{
	struct kvm_userspace_memory_region region;

	memset(vm, 0, sizeof(*vm));
	vm->pt_fd = -1;
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	T_ASSERT(vm->kvm_fd >= 0, "open /dev/kvm");
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	T_ASSERT(vm->vm_fd >= 0, "KVM_CREATE_VM");
	vm->mem_size = mem_size;
	vm->mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	T_ASSERT(vm->mem != MAP_FAILED, "mmap guest memory");
	region = (struct kvm_userspace_memory_region){
		.slot = 0, .guest_phys_addr = 0, .memory_size = mem_size,
		.userspace_addr = (uintptr_t)vm->mem,
	};
	T_ASSERT(!ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region),
		 "KVM_SET_USER_MEMORY_REGION");
	vm->vcpu_fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, 0);
	T_ASSERT(vm->vcpu_fd >= 0, "KVM_CREATE_VCPU");
	vm->run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       vm->vcpu_fd, 0);
	T_ASSERT(vm->run != MAP_FAILED, "mmap kvm_run");
	layout(vm);
	long_mode(vm->vcpu_fd);
}

void kt_vcpu_add(struct kt_vm *vm, struct kt_vcpu *vcpu)
{
	vcpu->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, ++vm->extra_vcpus);
	T_ASSERT(vcpu->fd >= 0, "KVM_CREATE_VCPU %d", vm->extra_vcpus);
	vcpu->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, vcpu->fd, 0);
	T_ASSERT(vcpu->run != MAP_FAILED, "mmap kvm_run");
	long_mode(vcpu->fd);
}

void kt_vcpu_free(struct kt_vm *vm, struct kt_vcpu *vcpu)
{
	munmap(vcpu->run, vm->run_size);
	close(vcpu->fd);
}

void kt_vm_new(struct kt_vm *vm, uint64_t mem_size, uint32_t flags)
{
	kt_vm_create(vm, mem_size);
	T_EQ(kt_attach(vm, flags), 0);
}

#define KT_PCT_PARAM	"/sys/module/kvm_pagetype/parameters/max_tables_pct"

void kt_pct_get(char *buf, size_t size)
{
	int fd = open(KT_PCT_PARAM, O_RDONLY);
	ssize_t n;

	T_ASSERT(fd >= 0, "open " KT_PCT_PARAM);
	n = read(fd, buf, size - 1);
	close(fd);
	T_ASSERT(n > 0, "read " KT_PCT_PARAM);
	buf[n] = 0;
}

int kt_pct_set(const char *val)
{
	int fd = open(KT_PCT_PARAM, O_WRONLY);
	ssize_t n;

	T_ASSERT(fd >= 0, "open " KT_PCT_PARAM);
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

void kt_vm_new_unbounded(struct kt_vm *vm, uint64_t mem_size, uint32_t flags)
{
	char was[16];

	kt_pct_get(was, sizeof(was));
	T_EQ(kt_pct_set("100"), 0);
	kt_vm_new(vm, mem_size, flags);
	T_EQ(kt_pct_set(was), 0);
}

void kt_vm_destroy(struct kt_vm *vm)
{
	munmap(vm->run, vm->run_size);
	close(vm->vcpu_fd);
	close(vm->vm_fd);
	close(vm->kvm_fd);
	if (vm->pt_fd >= 0)
		close(vm->pt_fd);
	munmap(vm->mem, vm->mem_size);
	memset(vm, 0, sizeof(*vm));
	vm->pt_fd = -1;
}

int kt_attach(struct kt_vm *vm, uint32_t flags)
{
	struct kvm_pagetype_attach a = { .vm_fd = vm->vm_fd, .flags = flags };

	if (vm->pt_fd < 0)
		vm->pt_fd = open("/dev/kvm-pagetype", O_RDWR | O_CLOEXEC);
	T_ASSERT(vm->pt_fd >= 0, "open /dev/kvm-pagetype");
	if (ioctl(vm->pt_fd, KVM_PAGETYPE_ATTACH, &a))
		return -errno;
	vm->nr_frames = a.nr_frames;
	return 0;
}

int kt_batch(struct kt_vm *vm, struct kvm_pagetype_op *ops, uint32_t count,
	     uint32_t *done)
{
	struct kvm_pagetype_batch b = {
		.gpa = KT_BATCH_GFN * KT_PAGE, .count = count,
	};

	memcpy(kt_frame(vm, KT_BATCH_GFN), ops, count * sizeof(*ops));
	if (ioctl(vm->pt_fd, KVM_PAGETYPE_RUN_BATCH, &b))
		return -errno;
	memcpy(ops, kt_frame(vm, KT_BATCH_GFN), count * sizeof(*ops));
	if (done)
		*done = b.done;
	return 0;
}

void kt_batch_all(struct kt_vm *vm, struct kvm_pagetype_op *ops,
		  uint32_t count)
{
	uint32_t done;

	T_EQ(kt_batch(vm, ops, count, &done), 0);
	T_EQ(done, count);
}

uint16_t kt_op(struct kt_vm *vm, uint16_t code, uint64_t arg)
{
	struct kvm_pagetype_op op = { .code = code, .arg = arg };

	kt_batch_all(vm, &op, 1);
	return op.result;
}

uint32_t kt_query(struct kt_vm *vm, uint64_t gfn)
{
	struct kvm_pagetype_op op = { .code = KVM_PAGETYPE_OP_QUERY, .arg = gfn };
	uint32_t done;

	T_EQ(kt_batch(vm, &op, 1, &done), 0);
	T_EQ(op.result, KVM_PAGETYPE_R_OK);
	return op.out;
}

void kt_stats(struct kt_vm *vm, bool global, struct kvm_pagetype_stats *s)
{
	struct kvm_pagetype_get_stats g = {
		.flags = global ? KVM_PAGETYPE_STATS_GLOBAL : 0,
	};

	T_ASSERT(!ioctl(vm->pt_fd, KVM_PAGETYPE_GET_STATS, &g), "GET_STATS");
	*s = g.stats;
}

int kt_set_doorbell(struct kt_vm *vm, uint64_t gpa)
{
	struct kvm_pagetype_doorbell d = { .gpa = gpa };

	return ioctl(vm->pt_fd, KVM_PAGETYPE_SET_DOORBELL, &d) ? -errno : 0;
}

struct kvm_pagetype_dma_device kt_pci_addr(const char *name)
{
	unsigned int seg, bus, slot, fn;

	T_ASSERT(sscanf(name, "%x:%x:%x.%x", &seg, &bus, &slot, &fn) == 4,
		 "PCI name %s", name);
	return (struct kvm_pagetype_dma_device){
		.segment = seg, .bus = bus, .devfn = slot << 3 | fn,
	};
}

static void on_alarm(int sig)
{
	(void)sig;
}

static int run_on(int vcpu_fd, struct kvm_run *run, uint64_t rip,
		  uint64_t rdi, uint64_t rsi, int port, uint64_t *rax,
		  unsigned int timeout_s)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_sec = timeout_s } };
	struct kvm_regs regs = { .rip = rip, .rdi = rdi, .rsi = rsi,
				 .rflags = 0x2 };
	int ret;

	/* A dead VM refuses every vCPU ioctl with -EIO. */
	if (ioctl(vcpu_fd, KVM_SET_REGS, &regs))
		return -errno;
	if (timeout_s) {
		sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART */
		setitimer(ITIMER_REAL, &it, NULL);
	}
	ret = ioctl(vcpu_fd, KVM_RUN, 0);
	if (timeout_s) {
		it.it_value.tv_sec = 0;
		setitimer(ITIMER_REAL, &it, NULL);
	}
	if (ret)
		return -errno;
	if (run->exit_reason != KVM_EXIT_IO || run->io.port != port) {
		fprintf(stderr, "kvmtest: unexpected exit %u (port %#x)\n",
			run->exit_reason, run->io.port);
		return -1;
	}
	if (rax) {
		T_ASSERT(!ioctl(vcpu_fd, KVM_GET_REGS, &regs),
			 "KVM_GET_REGS");
		*rax = regs.rax;
	}
	return 0;
}

static int run_at(struct kt_vm *vm, uint64_t rip, uint64_t rdi, uint64_t rsi,
		  int port, uint64_t *rax, unsigned int timeout_s)
{
	return run_on(vm->vcpu_fd, vm->run, rip, rdi, rsi, port, rax,
		      timeout_s);
}

static uint64_t store_rip(int bytes)
{
	T_ASSERT(bytes == 8 || bytes == 4, "store of %d bytes", bytes);
	return kt_kva(KT_CODE_GFN * KT_PAGE) + (bytes == 8 ? 0x00 : 0x10);
}

int kt_guest_store(struct kt_vm *vm, uint64_t va, uint64_t val, int bytes)
{
	return run_at(vm, store_rip(bytes), va, val, PORT_STORE, NULL, 0);
}

int kt_vcpu_store(struct kt_vcpu *vcpu, uint64_t va, uint64_t val)
{
	return run_on(vcpu->fd, vcpu->run, store_rip(8), va, val, PORT_STORE,
		      NULL, 0);
}

int kt_guest_store_dt(struct kt_vm *vm, bool idt, uint64_t va,
		      uint64_t desc_va)
{
	return run_at(vm, kt_kva(KT_CODE_GFN * KT_PAGE) + (idt ? 0x40 : 0x30),
		      va, desc_va, PORT_STORE, NULL, 0);
}

int kt_guest_load(struct kt_vm *vm, uint64_t va, uint64_t *val,
		  unsigned int timeout_s)
{
	return run_at(vm, kt_kva(KT_CODE_GFN * KT_PAGE) + 0x20, va, 0,
		      PORT_LOAD, val, timeout_s);
}

int kt_guest_sse_load(struct kt_vm *vm, uint64_t va, unsigned int timeout_s)
{
	return run_at(vm, kt_kva(KT_CODE_GFN * KT_PAGE) + 0x50, va, 0,
		      PORT_LOAD, NULL, timeout_s);
}

void kt_pin_user_tables(struct kt_vm *vm)
{
	struct kvm_pagetype_op ops[4] = {
		{ .code = KVM_PAGETYPE_OP_PIN_L1, .arg = KT_UL1_GFN },
		{ .code = KVM_PAGETYPE_OP_PIN_L2, .arg = KT_UL2_GFN },
		{ .code = KVM_PAGETYPE_OP_PIN_L3, .arg = KT_UL3_GFN },
		{ .code = KVM_PAGETYPE_OP_PIN_L4, .arg = KT_L4_GFN },
	};
	int i;

	kt_batch_all(vm, ops, 4);
	for (i = 0; i < 4; i++)
		T_EQ(ops[i].result, KVM_PAGETYPE_R_OK);
}

static struct kt_test *tests;

void kt_register(struct kt_test *t)
{
	struct kt_test **p = &tests;
	char *c;

	t->name = strdup(t->id);
	T_ASSERT(t->name, "strdup");
	for (c = t->name; *c; c++)
		if (*c == '_')
			*c = '-';
	/* Constructors run in no promised order: keep the file's. */
	while (*p && (*p)->line < t->line)
		p = &(*p)->next;
	t->next = *p;
	*p = t;
}

static struct kt_test *find_test(const char *name)
{
	struct kt_test *t;

	for (t = tests; t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* Named on the command line, or, with no names, not a KVMTEST_NAMED(). */
static bool selected(const struct kt_test *t, int argc, char **argv)
{
	int a;

	if (argc == 1)
		return !t->named_only;
	for (a = 1; a < argc; a++)
		if (!strcmp(argv[a], t->name))
			return true;
	return false;
}

/* Run one test in a child; 0 passed, 1 failed, 77 skipped. */
static int run_test(const struct kt_test *t)
{
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (!pid) {
		t->fn();
		exit(0);
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		printf("ok %s\n", t->name);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("skip %s\n", t->name);
		return 77;
	}
	if (WIFEXITED(status))
		printf("FAIL %s: exit status %d\n", t->name,
		       WEXITSTATUS(status));
	else
		printf("FAIL %s: %s\n", t->name, strsignal(WTERMSIG(status)));
	return 1;
}

int kvmtest_main(int argc, char **argv, void (*setup)(void))
{
	int a, ret, passed = 0, failed = 0, skipped = 0;
	const char *prog = program_invocation_short_name;
	struct kt_test *t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "list")) {
			for (t = tests; t; t = t->next)
				printf("%s\n", t->name);
			return 0;
		}
		if (!find_test(argv[a])) {
			fprintf(stderr, "%s: no test %s (%s list)\n", prog,
				argv[a], prog);
			return 1;
		}
	}
	for (t = tests; t && !selected(t, argc, argv); t = t->next)
		;
	if (!t) {
		fprintf(stderr, "%s: name the test to run (%s list)\n", prog,
			prog);
		return 1;
	}
	if (setup)
		setup();
	for (t = tests; t; t = t->next) {
		if (!selected(t, argc, argv))
			continue;
		ret = run_test(t);
		passed += ret == 0;
		failed += ret == 1;
		skipped += ret == 77;
	}
	printf("# %s: %d passed, %d failed, %d skipped\n", prog, passed,
	       failed, skipped);
	if (failed)
		return 1;
	return passed ? 0 : 77;
}
