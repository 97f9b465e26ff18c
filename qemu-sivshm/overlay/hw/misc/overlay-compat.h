/*
 * What differs between the QEMU releases the overlay builds in: Debian
 * 13's 10.0 and Debian 12's 7.2 (qemu-sivshm/build.sh).  The devices are
 * written against 10.0's API; every QEMU_VERSION_MAJOR test of the overlay
 * is here, so that their files read the same on both.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_MISC_OVERLAY_COMPAT_H
#define HW_MISC_OVERLAY_COMPAT_H

#include "hw/qdev-core.h"
#include "hw/qdev-properties.h"
#include "migration/blocker.h"

/*
 * The headers the devices use that 10.0 moved: include/sysemu/ became
 * include/system/ (and sysemu.h system.h), the QObject types left
 * include/qapi/qmp/ for include/qobject/, PCIDevice left hw/pci/pci.h for
 * hw/pci/pci_device.h.  10.0's kvm_int.h (KVMState, for the VM's fd)
 * compiles only per target, as pagetype.c does.
 */
#if QEMU_VERSION_MAJOR >= 10
#include "hw/pci/pci_device.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "system/kvm.h"
#ifdef COMPILING_PER_TARGET
#include "system/kvm_int.h"
#endif
#include "system/reset.h"
#include "system/system.h"
#else
#include "hw/pci/pci.h"
#include "qapi/qmp/qdict.h"
#include "qapi/qmp/qlist.h"
#include "sysemu/kvm.h"
#include "sysemu/kvm_int.h"
#include "sysemu/reset.h"
#include "sysemu/sysemu.h"
#endif

#if QEMU_VERSION_MAJOR < 10
/*
 * 10.0 takes a property array and its length, with no terminator; 7.2
 * walks the array up to an all-zero entry.  The copy lives as long as
 * the class, that is, as long as QEMU.
 */
static inline void device_class_set_props_n(DeviceClass *dc,
                                            const Property *props, size_t n)
{
    Property *terminated = g_new0(Property, n + 1);

    memcpy(terminated, props, n * sizeof(*props));
    device_class_set_props(dc, terminated);
}

/* 7.2 has the field this setter of 9.1 sets, under its old name. */
static inline void device_class_set_legacy_reset(DeviceClass *dc,
                                                 DeviceReset dev_reset)
{
    dc->reset = dev_reset;
}
#endif

/*
 * A migration blocker, with 10.0's ownership: on success the blocker
 * holds *reasonp until compat_migrate_del_blocker() frees it and clears
 * *reasonp; on failure *reasonp is freed and cleared at once.  7.2 takes
 * the Error itself and leaves freeing it to the caller.
 */
static inline int compat_migrate_add_blocker(Error **reasonp, Error **errp)
{
#if QEMU_VERSION_MAJOR >= 10
    return migrate_add_blocker(reasonp, errp);
#else
    int ret = migrate_add_blocker(*reasonp, errp);

    if (ret < 0) {
        error_free(*reasonp);
        *reasonp = NULL;
    }
    return ret;
#endif
}

/* Nothing to do if *reasonp is NULL (never added, or already removed). */
static inline void compat_migrate_del_blocker(Error **reasonp)
{
#if QEMU_VERSION_MAJOR >= 10
    migrate_del_blocker(reasonp);
#else
    if (*reasonp) {
        migrate_del_blocker(*reasonp);
        error_free(*reasonp);
        *reasonp = NULL;
    }
#endif
}

#endif
