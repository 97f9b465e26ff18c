/*
 * pagetype: the guest's door to kvm_pagetype.ko
 *
 * The guest writes the guest-physical address and length of an op batch
 * (linux/kvm_pagetype.h) to BAR0 and the device hands it to the host
 * module with KVM_PAGETYPE_RUN_BATCH, synchronously, in the MMIO handler:
 * when the guest's write completes, the ops have run and their results
 * are in guest memory.  The device can also register a doorbell page in
 * guest RAM, the module's fast path with no exit to user space.
 *
 * The register map is in docs/specs/pagetype.rst.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include "qemu/accel.h"
#include "qemu/bitops.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/core/cpu.h"
#include "hw/pci/pci.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"
#include "qom/qom-qobject.h"
#include "trace.h"
#include "overlay-compat.h"

#include "pagetype-lib/kvm_pagetype.h"
#include "pagetype-lib/pagetype-regs.h"

#define TYPE_PAGETYPE "pagetype"
OBJECT_DECLARE_SIMPLE_TYPE(PagetypeState, PAGETYPE)

struct PagetypeState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    int fd;                     /* /dev/kvm-pagetype, attached to our VM */
    Error *migration_blocker;

    uint64_t batch;             /* PAGETYPE_REG_BATCH_LO/HI */
    uint32_t status;            /* PAGETYPE_REG_STATUS */
    uint32_t done;              /* PAGETYPE_REG_DONE */
    uint64_t doorbell;          /* PAGETYPE_REG_DB_LO/HI */

    /* the device to confine (dma-device), once the guest uses us */
    struct kvm_pagetype_dma_device dma;
    bool dma_wanted;
    bool dma_confined;
    bool reset_registered;      /* pagetype_system_reset, at realize */
    bool dma_failed;            /* said once, not tried again */

    /* properties */
    char *path;
    bool kernel_half;
    char *dma_device;
};

/*
 * Confine the dma-device to this VM: its DMA reaches our RAM at IOVA =
 * guest-physical address, except frames whose type forbids it.  Done on
 * the guest's first batch or doorbell, not at realize: the firmware
 * remaps memory first (PAM), and removing a memslot releases the device.
 */
static void pagetype_confine(PagetypeState *s)
{
    int ret;

    if (!s->dma_wanted || s->dma_confined || s->dma_failed) {
        return;
    }
    ret = ioctl(s->fd, KVM_PAGETYPE_DMA_CONFINE, &s->dma) ? errno : 0;
    trace_pagetype_confine(s->dma_device, ret);
    if (ret && ret != EBUSY) {
        warn_report("pagetype: cannot confine %s to this VM: %s",
                    s->dma_device, strerror(ret));
        s->dma_failed = true;
        return;
    }
    s->dma_confined = true;
}

static void pagetype_run_batch(PagetypeState *s, uint32_t count)
{
    struct kvm_pagetype_batch b = { .gpa = s->batch, .count = count };

    pagetype_confine(s);
    s->done = 0;
    s->status = ioctl(s->fd, KVM_PAGETYPE_RUN_BATCH, &b) ? errno : 0;
    if (!s->status) {
        s->done = b.done;
    }
    trace_pagetype_batch(s->batch, count, s->done, s->status);
}

static void pagetype_set_doorbell(PagetypeState *s)
{
    struct kvm_pagetype_doorbell d = { .gpa = s->doorbell };

    pagetype_confine(s);
    s->status = ioctl(s->fd, KVM_PAGETYPE_SET_DOORBELL, &d) ? errno : 0;
    trace_pagetype_doorbell(s->doorbell, s->status);
}

static void pagetype_host_reset(PagetypeState *s);

static uint64_t pagetype_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    PagetypeState *s = opaque;

    switch (addr) {
    case PAGETYPE_REG_MAGIC:
        return PAGETYPE_MAGIC;
    case PAGETYPE_REG_VERSION:
        return KVM_PAGETYPE_ABI_VERSION;
    case PAGETYPE_REG_FEATURES:
        return PAGETYPE_F_DOORBELL | PAGETYPE_F_RESET;
    case PAGETYPE_REG_BATCH_LO:
        return (uint32_t)s->batch;
    case PAGETYPE_REG_BATCH_HI:
        return s->batch >> 32;
    case PAGETYPE_REG_STATUS:
        return s->status;
    case PAGETYPE_REG_DONE:
        return s->done;
    case PAGETYPE_REG_DB_LO:
        return (uint32_t)s->doorbell;
    case PAGETYPE_REG_DB_HI:
        return s->doorbell >> 32;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "pagetype: read of register 0x%"
                  HWADDR_PRIx "\n", addr);
    return 0;
}

static void pagetype_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                unsigned size)
{
    PagetypeState *s = opaque;

    switch (addr) {
    case PAGETYPE_REG_NULL:
        return;
    case PAGETYPE_REG_BATCH_LO:
        s->batch = deposit64(s->batch, 0, 32, val);
        return;
    case PAGETYPE_REG_BATCH_HI:
        s->batch = deposit64(s->batch, 32, 32, val);
        return;
    case PAGETYPE_REG_COUNT:
        pagetype_run_batch(s, val);
        return;
    case PAGETYPE_REG_DB_LO:
        s->doorbell = deposit64(s->doorbell, 0, 32, val);
        return;
    case PAGETYPE_REG_DB_HI:
        s->doorbell = deposit64(s->doorbell, 32, 32, val);
        pagetype_set_doorbell(s);
        return;
    case PAGETYPE_REG_RESET:
        /* A kernel about to kexec: its successor finds no table. */
        if (val == PAGETYPE_RESET_KEY) {
            pagetype_host_reset(s);
            return;
        }
        break;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "pagetype: write of 0x%" PRIx64
                  " to register 0x%" HWADDR_PRIx "\n", val, addr);
}

static const MemoryRegionOps pagetype_mmio_ops = {
    .read = pagetype_mmio_read,
    .write = pagetype_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* "[domain:]bus:slot.function" for the ioctls; false if it is not one. */
static bool pagetype_parse_pci(const char *str,
                               struct kvm_pagetype_dma_device *d)
{
    unsigned int seg = 0, bus, slot, fn;
    char end;

    if (sscanf(str, "%x:%x:%x.%x%c", &seg, &bus, &slot, &fn, &end) != 4) {
        seg = 0;
        if (sscanf(str, "%x:%x.%x%c", &bus, &slot, &fn, &end) != 3) {
            return false;
        }
    }
    if (bus > 0xff || slot > 0x1f || fn > 7) {
        return false;
    }
    *d = (struct kvm_pagetype_dma_device){
        .segment = seg, .bus = bus, .devfn = slot << 3 | fn,
    };
    return true;
}

/*
 * KVM writes guest memory at addresses the guest chose through mappings
 * it keeps (steal time, the kvmclock page, nested SVM's VMCB12 and VMX's
 * VMCS12, Hyper-V's pages), where kvm_pagetype.ko can see nothing: a
 * guest pointing one of them at a page table would change it unchecked
 * (docs/pagetype.md, "Writers of guest memory").  So every vCPU must go
 * without them, and with kvm-pv-enforce-cpuid=on, without which KVM
 * honours the PV MSRs whatever CPUID says.  The bits are read from the
 * CPUID the vCPU was realized with ("feature-words"): a feature property
 * reads "off" while only one of its bits is set.  Hot-added vCPUs take
 * -cpu's properties.
 */
static const struct {
    uint32_t leaf;
    const char *reg;
    int64_t bits;
    const char *name;
} pagetype_cpuid_off[] = {
    /* KVM_FEATURE_CLOCKSOURCE, KVM_FEATURE_CLOCKSOURCE2 */
    { 0x40000001, "EAX", 1 << 0 | 1 << 3, "kvmclock" },
    /* KVM_FEATURE_STEAL_TIME */
    { 0x40000001, "EAX", 1 << 5, "kvm-steal-time" },
    { 0x80000001, "ECX", 1 << 2, "svm" },
    { 0x00000001, "ECX", 1 << 5, "vmx" },
};

static bool pagetype_cpuid_ok(CPUState *cs, Error **errp)
{
    QObject *words = object_property_get_qobject(OBJECT(cs), "feature-words",
                                                 errp);
    unsigned found = 0;
    QListEntry *e;
    size_t i;

    if (!words) {
        return false;
    }
    QLIST_FOREACH_ENTRY(qobject_to(QList, words), e) {
        QDict *w = qobject_to(QDict, qlist_entry_obj(e));

        for (i = 0; i < ARRAY_SIZE(pagetype_cpuid_off); i++) {
            if (qdict_get_int(w, "cpuid-input-eax") !=
                pagetype_cpuid_off[i].leaf ||
                strcmp(qdict_get_str(w, "cpuid-register"),
                       pagetype_cpuid_off[i].reg)) {
                continue;
            }
            found |= 1u << i;
            if (qdict_get_int(w, "features") & pagetype_cpuid_off[i].bits) {
                error_setg(errp, "pagetype: vCPU %d offers %s", cs->cpu_index,
                           pagetype_cpuid_off[i].name);
                qobject_unref(words);
                return false;
            }
        }
    }
    qobject_unref(words);
    if (found != (1u << ARRAY_SIZE(pagetype_cpuid_off)) - 1) {
        error_setg(errp, "pagetype: vCPU %d: no CPUID word for %s",
                   cs->cpu_index, pagetype_cpuid_off[ctz32(~found)].name);
        return false;
    }
    return true;
}

/* A missing property is refused too: a QEMU that renamed one. */
static bool pagetype_cpu_ok(CPUState *cs, Error **errp)
{
    Object *cpu = OBJECT(cs);
    ObjectPropertyIterator iter;
    ObjectProperty *prop;
    Error *err = NULL;
    uint64_t spinlocks;

    if (!pagetype_cpuid_ok(cs, errp)) {
        return false;
    }
    if (!object_property_get_bool(cpu, "kvm-pv-enforce-cpuid", &err)) {
        if (err) {
            error_propagate(errp, err);
        } else {
            error_setg(errp, "pagetype: vCPU %d has kvm-pv-enforce-cpuid "
                       "off", cs->cpu_index);
        }
        return false;
    }
    /*
     * Any Hyper-V enlightenment gives the guest Hyper-V's MSRs: a set
     * hv-spinlocks, or one of the hv-* bits (hv-passthrough included).
     */
    spinlocks = object_property_get_uint(cpu, "hv-spinlocks", &err);
    if (err) {
        error_propagate(errp, err);
        return false;
    }
    if (spinlocks != UINT32_MAX) {
        error_setg(errp, "pagetype: vCPU %d has hv-spinlocks set",
                   cs->cpu_index);
        return false;
    }
    object_property_iter_init(&iter, cpu);
    while ((prop = object_property_iter_next(&iter))) {
        if (g_str_has_prefix(prop->name, "hv-") &&
            !strcmp(prop->type, "bool") &&
            strcmp(prop->name, "hv-enforce-cpuid") &&
            object_property_get_bool(cpu, prop->name, NULL)) {
            error_setg(errp, "pagetype: vCPU %d has %s=on", cs->cpu_index,
                       prop->name);
            return false;
        }
    }
    return true;
}

static bool pagetype_cpus_ok(Error **errp)
{
    ERRP_GUARD();
    Object *accel = OBJECT(current_accel());
    CPUState *cs;

    if (object_property_find(accel, "xen-version") &&
        object_property_get_uint(accel, "xen-version", NULL)) {
        error_setg(errp, "pagetype: KVM emulates Xen (xen-version), whose "
                   "shared pages KVM writes unseen");
        goto refused;
    }
    CPU_FOREACH(cs) {
        if (!pagetype_cpu_ok(cs, errp)) {
            goto refused;
        }
    }
    return true;

refused:
    error_append_hint(errp, "KVM writes those pages at addresses the guest "
                      "chose, unseen by kvm_pagetype.ko.  The device needs "
                      "-cpu <model>,kvmclock=off,kvm-steal-time=off,"
                      "svm=off,vmx=off,kvm-pv-enforce-cpuid=on, no hv-* "
                      "option and no xen-version.\n");
    return false;
}

static void pagetype_system_reset(void *opaque);

/* Undo pagetype_realize's steps from the last one that succeeded. */
static void pagetype_teardown(PagetypeState *s)
{
    if (s->reset_registered) {
        qemu_unregister_reset(pagetype_system_reset, s);
        s->reset_registered = false;
    }
    compat_migrate_del_blocker(&s->migration_blocker);
    if (s->fd >= 0) {
        close(s->fd);           /* detaches our VM */
        s->fd = -1;
    }
}

static void pagetype_realize(PCIDevice *pdev, Error **errp)
{
    PagetypeState *s = PAGETYPE(pdev);
    struct kvm_pagetype_attach a = {
        .flags = s->kernel_half ? KVM_PAGETYPE_ATTACH_KERNEL_HALF : 0,
    };
    int version;

    s->fd = -1;
    if (s->dma_device) {
        if (!pagetype_parse_pci(s->dma_device, &s->dma)) {
            error_setg(errp, "pagetype: dma-device %s is not a PCI address "
                       "([domain:]bus:slot.function)", s->dma_device);
            return;
        }
        s->dma_wanted = true;
    }
    if (!kvm_enabled()) {
        error_setg(errp, "pagetype: needs KVM (-accel kvm): the page types "
                   "live in the host module kvm_pagetype.ko");
        return;
    }
    if (!pagetype_cpus_ok(errp)) {
        return;
    }
    s->fd = open(s->path, O_RDWR | O_CLOEXEC);
    if (s->fd < 0) {
        error_setg_errno(errp, errno, "pagetype: cannot open %s "
                         "(is kvm_pagetype.ko loaded?)", s->path);
        return;
    }
    version = ioctl(s->fd, KVM_PAGETYPE_VERSION);
    if (version != KVM_PAGETYPE_ABI_VERSION) {
        error_setg(errp, "pagetype: %s speaks ABI %d, this QEMU %d",
                   s->path, version, KVM_PAGETYPE_ABI_VERSION);
        goto err;
    }
    a.vm_fd = kvm_state->vmfd;
    if (ioctl(s->fd, KVM_PAGETYPE_ATTACH, &a)) {
        error_setg_errno(errp, errno, "pagetype: cannot attach this VM "
                         "to %s", s->path);
        goto err;
    }
    error_setg(&s->migration_blocker, "pagetype: the page types of this "
               "VM live in the host module and are not migrated");
    if (compat_migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        goto err;
    }

    s->doorbell = KVM_PAGETYPE_NO_DOORBELL;
    qemu_register_reset(pagetype_system_reset, s);
    s->reset_registered = true;
    memory_region_init_io(&s->mmio, OBJECT(s), &pagetype_mmio_ops, s,
                          "pagetype-mmio", PAGETYPE_BAR0_SIZE);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY, &s->mmio);
    trace_pagetype_attach(a.nr_frames);
    return;

err:
    pagetype_teardown(s);
}

static void pagetype_exit(PCIDevice *pdev)
{
    pagetype_teardown(PAGETYPE(pdev));
}

/*
 * The host forgets every table and the doorbell: on a machine reset, and
 * when a kernel about to kexec asks (PAGETYPE_REG_RESET).
 */
static void pagetype_host_reset(PagetypeState *s)
{
    if (s->fd >= 0 && ioctl(s->fd, KVM_PAGETYPE_RESET)) {
        warn_report("pagetype: reset: %s", strerror(errno));
    }
    s->batch = 0;
    s->status = 0;
    s->done = 0;
    s->doorbell = KVM_PAGETYPE_NO_DOORBELL;
    /* The firmware remaps memory again: confine again on first use. */
    s->dma_confined = false;
}

/* A guest reset starts with no table pinned and no doorbell. */
static void pagetype_system_reset(void *opaque)
{
    pagetype_host_reset(opaque);
}

/*
 * A bus reset (a secondary bus reset the guest asks for) clears the
 * result registers only.  The guest's tables stay pinned and its doorbell
 * set at the host: forgetting them under a running kernel would leave its
 * live tables unchecked.
 */
static void pagetype_bus_reset(DeviceState *dev)
{
    PagetypeState *s = PAGETYPE(dev);

    s->status = 0;
    s->done = 0;
}

static const Property pagetype_properties[] = {
    DEFINE_PROP_STRING("path", PagetypeState, path),
    DEFINE_PROP_BOOL("kernel-half", PagetypeState, kernel_half, true),
    DEFINE_PROP_STRING("dma-device", PagetypeState, dma_device),
};

static void pagetype_instance_init(Object *obj)
{
    PagetypeState *s = PAGETYPE(obj);

    s->fd = -1;
    s->path = g_strdup("/dev/kvm-pagetype");
}

static void pagetype_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = pagetype_realize;
    k->exit = pagetype_exit;
    k->vendor_id = PAGETYPE_PCI_VENDOR_ID;
    k->device_id = PAGETYPE_PCI_DEVICE_ID;
    k->class_id = PCI_CLASS_OTHERS;
    k->revision = 1;
    device_class_set_props_n(dc, pagetype_properties,
                             ARRAY_SIZE(pagetype_properties));
    device_class_set_legacy_reset(dc, pagetype_bus_reset);
    /*
     * Neither plugged nor ejected at run time: an eject (which a guest
     * can ask through ACPI) would drop every table under a running
     * kernel.
     */
    dc->hotpluggable = false;
    dc->desc = "Xen-style page types, validated by kvm_pagetype.ko";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo pagetype_types[] = {
    {
        .name          = TYPE_PAGETYPE,
        .parent        = TYPE_PCI_DEVICE,
        .instance_size = sizeof(PagetypeState),
        .instance_init = pagetype_instance_init,
        .class_init    = pagetype_class_init,
        .interfaces    = (InterfaceInfo[]) {
            { INTERFACE_CONVENTIONAL_PCI_DEVICE },
            { },
        },
    },
};

DEFINE_TYPES(pagetype_types)
