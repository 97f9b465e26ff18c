/*
 * SIVSHM: secure sliced inter-VM shared memory
 *
 * A mapper VM (id 0) sees the whole shared region; reducer VM j sees only
 * its own slice.  The QEMU processes exchange eventfds directly over a unix
 * socket, with no distributor: the mapper's QEMU listens, each reducer's
 * QEMU connects.  The handshake, the geometry and the slot memory are
 * libsivshm's own code, compiled in from sivshm-lib/.
 *
 * A reducer on another host joins over RDMA instead (remote=), through
 * libsivshm's remote-reducer backend, also compiled in.
 *
 * This file is the PCI device: its registers, its interrupts (irqfd under
 * KVM) and the doorbell eventfds; the roles are sivshm-mapper.c,
 * sivshm-reducer.c and sivshm-remote.c.  The register map is in
 * docs/specs/sivshm.rst.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */


#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "trace.h"
#include "overlay-compat.h"

#include "sivshm-lib/sivshm-regs.h"
#include "sivshm-internal.h"

/* The peers whose eventfds ring us: the reducers, or the mapper. */
static uint32_t sivshm_first_in(SivshmState *s)
{
    return sivshm_is_mapper(s) ? 1 : 0;
}

static uint32_t sivshm_last_in(SivshmState *s)
{
    return sivshm_is_mapper(s) ? s->geo.nreducers : 0;
}

static void sivshm_update_irq(SivshmState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!msix_enabled(pdev)) {
        pci_set_irq(pdev, (s->intr_status & s->intr_mask) != 0);
    }
}

/* Raise doorbell @vector (or the peer-change event) in this guest. */
static void sivshm_raise(SivshmState *s, uint32_t bit, unsigned vector)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    trace_sivshm_user_irq(vector);
    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
        return;
    }
    s->intr_status |= bit;
    sivshm_update_irq(s);
}

static uint64_t sivshm_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    SivshmState *s = opaque;

    switch (addr) {
    case SIVSHM_REG_ID:
        return s->id;
    case SIVSHM_REG_ROLE:
        return sivshm_is_mapper(s) ? SIVSHM_REG_ROLE_MAPPER
                                    : SIVSHM_REG_ROLE_REDUCER;
    case SIVSHM_REG_NREDUCERS:
        return s->geo.nreducers;
    case SIVSHM_REG_NVECTORS:
        return s->nvectors;
    case SIVSHM_REG_SLICE_LO:
        return (uint32_t)s->geo.slice_size;
    case SIVSHM_REG_SLICE_HI:
        return s->geo.slice_size >> 32;
    case SIVSHM_REG_REGION_LO:
    case SIVSHM_REG_REGION_HI: {
        uint64_t bytes = sivshm_is_mapper(s) ? s->geo.region_size
                                             : s->geo.slice_size;

        return addr == SIVSHM_REG_REGION_LO ? (uint32_t)bytes : bytes >> 32;
    }
    case SIVSHM_REG_PEERS_LO:
        return (uint32_t)s->peers;
    case SIVSHM_REG_PEERS_HI:
        return s->peers >> 32;
    case SIVSHM_REG_INTR_MASK:
        return s->intr_mask;
    case SIVSHM_REG_INTR_STATUS:
        return s->intr_status;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "sivshm: read of unknown register 0x%"
                  HWADDR_PRIx "\n", addr);
    return 0;
}

static void sivshm_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                              unsigned size)
{
    SivshmState *s = opaque;
    uint32_t peer = val >> 16, vector = val & 0xffff;

    switch (addr) {
    case SIVSHM_REG_INTR_MASK:
        s->intr_mask = val;
        sivshm_update_irq(s);
        return;
    case SIVSHM_REG_INTR_STATUS:
        s->intr_status &= ~(uint32_t)val;
        sivshm_update_irq(s);
        return;
    case SIVSHM_REG_DOORBELL:
        /*
         * A doorbell to a connected peer never gets here: its ioeventfd
         * took it.  What is left is the guest's mistake.
         */
        if (vector >= s->nvectors ||
            !sivshm_peer_valid(&s->geo, s->id, peer)) {
            qemu_log_mask(LOG_GUEST_ERROR, "sivshm: doorbell to invalid "
                          "peer %u vector %u\n", peer, vector);
        } else {
            qemu_log_mask(LOG_GUEST_ERROR, "sivshm: doorbell to absent "
                          "peer %u\n", peer);
        }
        return;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "sivshm: write of unknown or read-only "
                  "register 0x%" HWADDR_PRIx "\n", addr);
}

static const MemoryRegionOps sivshm_mmio_ops = {
    .read = sivshm_mmio_read,
    .write = sivshm_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* A peer rang one of our vectors. */
static void sivshm_in_event(void *opaque)
{
    SivshmIn *in = opaque;

    if (event_notifier_test_and_clear(&in->n)) {
        sivshm_raise(in->s, 1u << in->vector, in->vector);
    }
}

void sivshm_init_in(SivshmState *s, uint32_t peer, uint32_t vector, int fd)
{
    SivshmIn *in = &s->in[peer][vector];

    in->s = s;
    in->vector = vector;
    event_notifier_init_fd(&in->n, fd);
}

void sivshm_watch_in(SivshmState *s, uint32_t peer, uint32_t vector, bool on)
{
    SivshmIn *in = &s->in[peer][vector];

    qemu_set_fd_handler(event_notifier_get_fd(&in->n),
                        on ? sivshm_in_event : NULL, NULL, in);
}

/*
 * irqfd.  Under KVM, while MSI-X is enabled and a doorbell vector is
 * unmasked, the eventfds the peers ring for that vector are attached to its
 * MSI route and KVM injects the interrupt without waking this process.
 * A masked vector goes back to sivshm_in_event(), which leaves it pending
 * in the PBA.  The peer-change vector is always raised from here.
 */
static void sivshm_vector_release(PCIDevice *pdev, unsigned vector)
{
    SivshmState *s = SIVSHM(pdev);
    SivshmVector *v = &s->vec[vector];

    if (vector >= s->nvectors || !v->irqfd) {
        return;
    }
    for (uint32_t p = sivshm_first_in(s); p <= sivshm_last_in(s); p++) {
        kvm_irqchip_remove_irqfd_notifier_gsi(kvm_state, &s->in[p][vector].n,
                                              v->virq);
        /* What rang after the detach is still counted in the eventfd. */
        sivshm_watch_in(s, p, vector, true);
    }
    v->irqfd = false;
    trace_sivshm_irqfd_off(vector);
}

static int sivshm_vector_use(PCIDevice *pdev, unsigned vector, MSIMessage msg)
{
    SivshmState *s = SIVSHM(pdev);
    SivshmVector *v = &s->vec[vector];
    uint32_t p;
    int ret;

    if (vector >= s->nvectors || v->irqfd) {
        return 0;
    }
    if (v->virq < 0) {
        KVMRouteChange c = kvm_irqchip_begin_route_changes(kvm_state);

        ret = kvm_irqchip_add_msi_route(&c, vector, pdev);
        if (ret < 0) {
            goto fail;
        }
        kvm_irqchip_commit_route_changes(&c);
        v->virq = ret;
    } else {
        ret = kvm_irqchip_update_msi_route(kvm_state, v->virq, msg, pdev);
        if (ret < 0) {
            goto fail;
        }
        kvm_irqchip_commit_routes(kvm_state);
    }
    for (p = sivshm_first_in(s); p <= sivshm_last_in(s); p++) {
        /* KVM injects at once what rang before the attach. */
        sivshm_watch_in(s, p, vector, false);
        ret = kvm_irqchip_add_irqfd_notifier_gsi(kvm_state,
                                                 &s->in[p][vector].n, NULL,
                                                 v->virq);
        if (ret < 0) {
            sivshm_watch_in(s, p, vector, true);
            while (p-- > sivshm_first_in(s)) {
                kvm_irqchip_remove_irqfd_notifier_gsi(kvm_state,
                                                      &s->in[p][vector].n,
                                                      v->virq);
                sivshm_watch_in(s, p, vector, true);
            }
            goto fail;
        }
    }
    v->irqfd = true;
    trace_sivshm_irqfd_on(vector, v->virq);
    return 0;

fail:
    /* Never fatal: the interrupts keep coming, through this process. */
    warn_report_once("sivshm: no irqfd for vector %u (%s): doorbells are "
                     "injected by QEMU", vector, strerror(-ret));
    return 0;
}

/* The guest reads the PBA: report the masked vectors that were rung. */
static void sivshm_vector_poll(PCIDevice *pdev, unsigned start, unsigned end)
{
    SivshmState *s = SIVSHM(pdev);

    for (unsigned vector = start; vector < MIN(end, s->nvectors); vector++) {
        if (!msix_is_masked(pdev, vector)) {
            continue;
        }
        for (uint32_t p = sivshm_first_in(s); p <= sivshm_last_in(s); p++) {
            if (event_notifier_test_and_clear(&s->in[p][vector].n)) {
                msix_set_pending(pdev, vector);
            }
        }
    }
}

static void sivshm_irqfd_on(SivshmState *s)
{
    if (msix_set_vector_notifiers(PCI_DEVICE(s), sivshm_vector_use,
                                  sivshm_vector_release,
                                  sivshm_vector_poll) == 0) {
        s->irqfd_notifiers = true;
    }
}

static void sivshm_irqfd_off(SivshmState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!s->irqfd_notifiers) {
        return;
    }
    /* With MSI-X already disabled this releases nothing: do it here. */
    msix_unset_vector_notifiers(pdev);
    for (uint32_t v = 0; v < s->nvectors; v++) {
        sivshm_vector_release(pdev, v);
        if (s->vec[v].virq >= 0) {
            kvm_irqchip_release_virq(kvm_state, s->vec[v].virq);
            s->vec[v].virq = -1;
        }
    }
    s->irqfd_notifiers = false;
}

static void sivshm_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                                int len)
{
    SivshmState *s = SIVSHM(pdev);
    bool was_enabled = msix_enabled(pdev);

    pci_default_write_config(pdev, addr, val, len);
    if (!kvm_msi_via_irqfd_enabled() || was_enabled == msix_enabled(pdev)) {
        return;
    }
    if (msix_enabled(pdev)) {
        sivshm_irqfd_on(s);
    } else {
        sivshm_irqfd_off(s);
    }
}

/* Bind the doorbell values for @peer to the eventfds we ring. */
void sivshm_bind_out(SivshmState *s, uint32_t peer, const int *fds)
{
    memory_region_transaction_begin();
    for (uint32_t v = 0; v < s->nvectors; v++) {
        event_notifier_init_fd(&s->out[peer][v], fds[v]);
        memory_region_add_eventfd(&s->mmio, SIVSHM_REG_DOORBELL, 4, true,
                                  peer << 16 | v, &s->out[peer][v]);
    }
    memory_region_transaction_commit();
    s->out_bound[peer] = true;
}

void sivshm_unbind_out(SivshmState *s, uint32_t peer)
{
    if (!s->out_bound[peer]) {
        return;
    }
    memory_region_transaction_begin();
    for (uint32_t v = 0; v < s->nvectors; v++) {
        memory_region_del_eventfd(&s->mmio, SIVSHM_REG_DOORBELL, 4, true,
                                  peer << 16 | v, &s->out[peer][v]);
    }
    memory_region_transaction_commit();
    s->out_bound[peer] = false;
}

/* Forget @peer's eventfds that sivshm_bind_out() bound, and close them. */
void sivshm_drop_out(SivshmState *s, uint32_t peer)
{
    if (!s->out_bound[peer]) {
        return;
    }
    sivshm_unbind_out(s, peer);
    for (uint32_t v = 0; v < s->nvectors; v++) {
        event_notifier_cleanup(&s->out[peer][v]);
    }
}

/* Stop hearing the eventfds sivshm_init_in() took for @peer; close them. */
void sivshm_drop_in(SivshmState *s, uint32_t peer)
{
    for (uint32_t v = 0; v < s->nvectors; v++) {
        SivshmIn *in = &s->in[peer][v];

        if (in->s) {
            qemu_set_fd_handler(event_notifier_get_fd(&in->n), NULL,
                                NULL, NULL);
            event_notifier_cleanup(&in->n);
            in->s = NULL;
        }
    }
}

void sivshm_peer_event(SivshmState *s)
{
    sivshm_raise(s, SIVSHM_INTR_PEER_CHANGE, s->nvectors);
}

/* A slot in bar1 holds a reference on us: take them out, or we never go. */
void sivshm_del_slots(SivshmState *s)
{
    memory_region_transaction_begin();
    while (s->nslots) {
        uint32_t j = --s->nslots;

        memory_region_del_subregion(&s->bar1, s->adopted & 1ull << j ?
                                              &s->adopt_mr[j] :
                                              &s->slot_mr[j]);
    }
    memory_region_transaction_commit();
}

/*
 * Undo whatever realize did, in reverse order: on a realize that failed
 * halfway as on unplug.  Memory regions are the object's children and go
 * with it once nothing else holds it.
 */
static void sivshm_teardown(SivshmState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    sivshm_irqfd_off(s);
    if (msix_present(pdev)) {
        msix_uninit_exclusive_bar(pdev);
    }
    if (s->role) {
        s->role->teardown(s);
    }
    compat_migrate_del_blocker(&s->migration_blocker);
}

static void sivshm_realize(PCIDevice *pdev, Error **errp)
{
    SivshmState *s = SIVSHM(pdev);
    Error *local_err = NULL;

    if (s->remote) {
        /* The mapper's memory and socket are on its own host. */
        if (sivshm_is_mapper(s)) {
            error_setg(errp, "sivshm: remote is a reducer's (vm-id 1..%u): "
                       "a mapper serves remote reducers from a host "
                       "process (sivshm_mapper_serve_remote)",
                       SIVSHM_MAX_REDUCERS);
            return;
        }
        if (s->shm_id || s->socket_path) {
            error_setg(errp, "sivshm: shm and socket are a local peer's: "
                       "a reducer given remote joins over RDMA only");
            return;
        }
    } else if (!s->shm_id || !s->socket_path) {
        error_setg(errp, "sivshm: shm and socket must be set (or remote, "
                   "for a reducer whose mapper is on another host)");
        return;
    }
    if (s->nvectors < 1 || s->nvectors > SIVSHM_MAX_VECTORS) {
        error_setg(errp, "sivshm: vectors must be 1..%u", SIVSHM_MAX_VECTORS);
        return;
    }
    s->sock = -1;
    for (uint32_t v = 0; v < SIVSHM_MAX_VECTORS; v++) {
        s->vec[v].virq = -1;
    }
    pdev->config[PCI_INTERRUPT_PIN] = 1;

    /* Like ivshmem: the peers' memory and eventfds do not travel. */
    error_setg(&s->migration_blocker, "sivshm: the shared region and the "
               "peers' eventfds belong to this host and cannot be migrated");
    if (compat_migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        return;
    }

    memory_region_init_io(&s->mmio, OBJECT(s), &sivshm_mmio_ops, s,
                          "sivshm.mmio", SIVSHM_BAR0_SIZE);
    s->role = sivshm_is_mapper(s) ? &sivshm_mapper_role :
              s->remote ? &sivshm_remote_role : &sivshm_reducer_role;
    s->role->realize(s, &local_err);
    if (local_err) {
        goto fail;
    }

    pci_register_bar(pdev, SIVSHM_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->mmio);
    pci_register_bar(pdev, SIVSHM_BAR_MEM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_PREFETCH |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar1);
    if (s->msix) {
        /* One vector per doorbell vector, one for peer changes. */
        if (msix_init_exclusive_bar(pdev, s->nvectors + 1, SIVSHM_BAR_MSIX,
                                    &local_err)) {
            goto fail;
        }
        for (uint32_t v = 0; v <= s->nvectors; v++) {
            msix_vector_use(pdev, v);
        }
    }
    return;

fail:
    sivshm_teardown(s);
    error_propagate(errp, local_err);
}

static void sivshm_exit(PCIDevice *pdev)
{
    sivshm_teardown(SIVSHM(pdev));
}

/* What BAR1 may map until the last reference to us is gone. */
static void sivshm_finalize(Object *obj)
{
    sivshm_remote_finalize(SIVSHM(obj));
}

static void sivshm_reset(DeviceState *dev)
{
    SivshmState *s = SIVSHM(dev);

    /* MSI-X is reset after this: the routes go with it. */
    sivshm_irqfd_off(s);
    s->intr_mask = 0;
    s->intr_status = 0;
}

static const Property sivshm_properties[] = {
    DEFINE_PROP_STRING("shm", SivshmState, shm_id),
    DEFINE_PROP_STRING("socket", SivshmState, socket_path),
    DEFINE_PROP_UINT32("vm-id", SivshmState, id, 0),
    DEFINE_PROP_SIZE("size", SivshmState, size, 0),
    DEFINE_PROP_UINT32("reducers", SivshmState, nreducers, 0),
    DEFINE_PROP_BOOL("unlink", SivshmState, unlink, true),
    DEFINE_PROP_STRING("dir", SivshmState, dir),
    DEFINE_PROP_UINT32("vectors", SivshmState, nvectors, 1),
    DEFINE_PROP_BOOL("msix", SivshmState, msix, true),
    DEFINE_PROP_UINT32("timeout", SivshmState, timeout_ms, 10000),
    DEFINE_PROP_STRING("creds", SivshmState, creds),
    DEFINE_PROP_STRING("mapper-cred", SivshmState, mapper_cred),
    DEFINE_PROP_STRING("remote", SivshmState, remote),
    DEFINE_PROP_STRING("key-secret", SivshmState, key_secret),
};

static void sivshm_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = sivshm_realize;
    k->exit = sivshm_exit;
    k->config_write = sivshm_write_config;
    k->vendor_id = SIVSHM_PCI_VENDOR_ID;
    k->device_id = SIVSHM_PCI_DEVICE_ID;
    k->class_id = PCI_CLASS_MEMORY_RAM;
    k->revision = 1;
    device_class_set_props_n(dc, sivshm_properties,
                             ARRAY_SIZE(sivshm_properties));
    device_class_set_legacy_reset(dc, sivshm_reset);
    dc->desc = "Secure sliced inter-VM shared memory";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo sivshm_types[] = {
    {
        .name          = TYPE_SIVSHM,
        .parent        = TYPE_PCI_DEVICE,
        .instance_size = sizeof(SivshmState),
        .instance_finalize = sivshm_finalize,
        .class_init    = sivshm_class_init,
        .interfaces    = (InterfaceInfo[]) {
            { INTERFACE_CONVENTIONAL_PCI_DEVICE },
            { },
        },
    },
};

DEFINE_TYPES(sivshm_types)
