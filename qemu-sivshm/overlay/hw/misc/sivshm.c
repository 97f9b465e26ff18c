/*
 * SIVSHM: secure sliced inter-VM shared memory
 *
 * A mapper VM (id 0) sees the whole shared region; reducer VM j sees only
 * its own slice.  The QEMU processes exchange eventfds directly over a unix
 * socket, with no distributor: the mapper's QEMU listens, each reducer's
 * QEMU connects.  The handshake, the geometry and the slot memory are
 * libsivshm's own code, compiled in from sivshm-lib/.
 *
 * The register map is in docs/specs/sivshm.rst.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#include "qemu/osdep.h"
#include <sys/eventfd.h>
#include "qemu/units.h"
#include "qemu/host-utils.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/event_notifier.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"
#include "sysemu/kvm.h"
#include "sysemu/sysemu.h"
#include "migration/blocker.h"
#include "trace.h"

#include "sivshm-lib/client.h"
#include "sivshm-lib/fds.h"
#include "sivshm-lib/sivshm-regs.h"
#include "sivshm-lib/region.h"
#include "sivshm-lib/server.h"

#define TYPE_SIVSHM "sivshm"
OBJECT_DECLARE_SIMPLE_TYPE(SivshmState, SIVSHM)

/* An eventfd a peer rings for us, and where it lands. */
typedef struct SivshmIn {
    EventNotifier n;
    SivshmState *s;
    uint32_t vector;
} SivshmIn;

/* A doorbell vector delivered by KVM straight from the eventfds (irqfd). */
typedef struct SivshmVector {
    int virq;           /* its MSI route, -1 before the first use */
    bool irqfd;         /* the eventfds are attached to virq */
} SivshmVector;

struct SivshmState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion bar1;
    MemoryRegion slot_mr[SIVSHM_MAX_REDUCERS + 1];
    uint32_t nslots;            /* slot_mr[0..nslots) are in bar1 */

    /* properties */
    char *shm_id;
    char *socket_path;
    char *dir;
    uint32_t id;
    uint64_t size;
    uint32_t nreducers;
    uint32_t nvectors;
    bool unlink;
    bool msix;
    uint32_t timeout_ms;
    char *creds;                /* mapper: who may take which id */
    char *mapper_cred;          /* reducer: who may be the mapper */

    struct sivshm_geometry geo;
    uint32_t intr_mask;
    uint32_t intr_status;
    uint64_t peers;

    /* The eventfds the peers ring for us: [peer][vector]. */
    SivshmIn in[SIVSHM_MAX_REDUCERS + 1][SIVSHM_MAX_VECTORS];
    /* The eventfds we ring, bound to the doorbell: [peer][vector]. */
    EventNotifier out[SIVSHM_MAX_REDUCERS + 1][SIVSHM_MAX_VECTORS];
    bool out_bound[SIVSHM_MAX_REDUCERS + 1];
    /* Under KVM, with MSI-X enabled: the doorbell vectors' routes. */
    SivshmVector vec[SIVSHM_MAX_VECTORS];
    bool irqfd_notifiers;
    Error *migration_blocker;

    /* mapper; realize sets each flag once that part is done */
    struct sivshm_region region;
    bool region_open;
    struct proto_server srv;
    bool server_init;
    /* unlink=off: slots reducers handed back, and the save at exit */
    MemoryRegion adopt_mr[SIVSHM_MAX_REDUCERS + 1];
    uint64_t adopted;           /* bit j: adopt_mr[j] took slot_mr[j]'s place */
    Notifier exit_notifier;
    bool save_at_exit;
    int watched[PROTO_MAX_POLLFDS];
    unsigned int nwatched;
    QEMUTimer *hello_timer;

    /* reducer */
    struct proto_cred mapper_want;
    bool check_mapper;
    int sock;
    dev_t slot_dev;             /* the slot file we map, to know it again */
    ino_t slot_ino;
    QEMUTimer *rejoin_timer;
    int rejoin_ms;              /* the next retry's delay */
    bool rejoin_warned;
};

static bool sivshm_is_mapper(SivshmState *s)
{
    return s->id == 0;
}

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

static void sivshm_init_in(SivshmState *s, uint32_t peer, uint32_t vector,
                           int fd)
{
    SivshmIn *in = &s->in[peer][vector];

    in->s = s;
    in->vector = vector;
    event_notifier_init_fd(&in->n, fd);
}

static void sivshm_watch_in(SivshmState *s, uint32_t peer, uint32_t vector,
                            bool on)
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
static void sivshm_bind_out(SivshmState *s, uint32_t peer, const int *fds)
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

static void sivshm_unbind_out(SivshmState *s, uint32_t peer)
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

static void sivshm_peer_event(SivshmState *s)
{
    sivshm_raise(s, SIVSHM_INTR_PEER_CHANGE, s->nvectors);
}

/* Mapper: the server's fds change with every event; follow them. */
static void sivshm_server_rewatch(SivshmState *s);

static void sivshm_server_event(void *opaque)
{
    SivshmState *s = opaque;
    struct pollfd pfd[PROTO_MAX_POLLFDS];
    unsigned int n;
    int timeout;

    n = proto_server_pollfds(&s->srv, pfd);
    if (poll(pfd, n, 0) < 0) {
        return;
    }
    proto_server_dispatch(&s->srv, pfd, n);
    sivshm_server_rewatch(s);
    timeout = proto_server_timeout(&s->srv);
    if (timeout >= 0) {
        timer_mod(s->hello_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + timeout + 1);
    }
}

static void sivshm_server_rewatch(SivshmState *s)
{
    struct pollfd pfd[PROTO_MAX_POLLFDS];
    unsigned int n, i;

    for (i = 0; i < s->nwatched; i++) {
        qemu_set_fd_handler(s->watched[i], NULL, NULL, NULL);
    }
    n = proto_server_pollfds(&s->srv, pfd);
    for (i = 0; i < n; i++) {
        s->watched[i] = pfd[i].fd;
        qemu_set_fd_handler(pfd[i].fd, sivshm_server_event, NULL, s);
    }
    s->nwatched = n;
}

/*
 * unlink=off: a reducer that lived through our restart hands back its slot,
 * newer than the file we started from.  Its memory takes our slot's place
 * in BAR1, at the same guest addresses; ours loses its pages.
 */
static int sivshm_adopt_slot(void *opaque, uint32_t j, int fd)
{
    SivshmState *s = opaque;
    Error *local_err = NULL;
    int ramfd = dup(fd), err;

    if (ramfd < 0) {
        return -errno;
    }
    memory_region_init_ram_from_fd(&s->adopt_mr[j], OBJECT(s), "sivshm.slot",
                                   s->geo.slice_size, RAM_SHARED, ramfd, 0,
                                   &local_err);
    if (local_err) {
        close(ramfd);
        error_report_err(local_err);
        return -EIO;
    }
    memory_region_transaction_begin();
    memory_region_del_subregion(&s->bar1, &s->slot_mr[j]);
    memory_region_add_subregion(&s->bar1, sivshm_slot_offset(&s->geo, j),
                                &s->adopt_mr[j]);
    memory_region_transaction_commit();
    s->adopted |= 1ull << j;
    err = sivshm_region_adopt(&s->region, j, fd);
    assert(!err);               /* j is in range, and nothing is mapped */
    return 0;
}

/* unlink=off: keep every reducer's slot in its file for the next mapper. */
static void sivshm_save(SivshmState *s)
{
    int err = sivshm_region_save(&s->region, s->shm_id, s->dir);

    if (err) {
        error_report("sivshm: cannot save the slots of %s in %s: %s",
                     s->shm_id, s->dir, strerror(-err));
    }
}

static void sivshm_exit_notify(Notifier *n, void *data)
{
    SivshmState *s = container_of(n, SivshmState, exit_notifier);

    sivshm_save(s);
}

static void sivshm_hello_timeout(void *opaque)
{
    sivshm_server_event(opaque);
}

static void sivshm_peer_changed(void *opaque, uint32_t id, int connected)
{
    SivshmState *s = opaque;

    if (connected) {
        sivshm_bind_out(s, id, s->srv.peer[id].out_fd);
        s->peers |= 1ull << id;
    } else {
        /* The server closes the fds itself, after this returns. */
        sivshm_unbind_out(s, id);
        s->peers &= ~(1ull << id);
    }
    sivshm_peer_event(s);
}

static void sivshm_server_log(void *opaque, const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    warn_report("sivshm: %s", msg);
}

static void sivshm_mapper_realize(SivshmState *s, Error **errp)
{
    int err;

    if (!s->nreducers || !s->size) {
        error_setg(errp, "sivshm: the mapper (vm-id=0) needs size and "
                   "reducers");
        return;
    }
    if (s->mapper_cred) {
        error_setg(errp, "sivshm: mapper-cred is a reducer's to set");
        return;
    }
    err = sivshm_geometry_init(&s->geo, s->size, s->nreducers,
                               qemu_real_host_page_size());
    if (err) {
        error_setg(errp, "sivshm: %" PRIu64 " bytes cannot be cut into %u "
                   "slices (at most %u reducers and %llu bytes, at least a "
                   "page per slot)", s->size, s->nreducers + 1,
                   SIVSHM_MAX_REDUCERS, SIVSHM_MAX_REGION);
        return;
    }
    if (!s->unlink && !s->dir) {
        error_setg(errp, "sivshm: unlink=off needs a backing dir");
        return;
    }
    err = sivshm_region_open(&s->region, &s->geo, s->shm_id, s->dir,
                             !s->unlink);
    if (err) {
        error_setg_errno(errp, -err, "sivshm: cannot create the slots of %s",
                         s->shm_id);
        return;
    }
    s->region_open = true;

    memory_region_init(&s->bar1, OBJECT(s), "sivshm.bar1",
                       pow2ceil(s->geo.region_size));
    for (uint32_t j = 0; j <= s->geo.nreducers; j++) {
        Error *local_err = NULL;
        int fd = dup(s->region.fd[j]);    /* the RAM block owns its fd */

        if (fd < 0) {
            error_setg_errno(errp, errno, "sivshm: dup");
            return;
        }
        memory_region_init_ram_from_fd(&s->slot_mr[j], OBJECT(s),
                                       "sivshm.slot", s->geo.slice_size,
                                       RAM_SHARED, fd, 0, &local_err);
        if (local_err) {
            close(fd);
            error_propagate(errp, local_err);
            return;
        }
        memory_region_add_subregion(&s->bar1,
                                    sivshm_slot_offset(&s->geo, j),
                                    &s->slot_mr[j]);
        s->nslots++;
    }

    err = proto_server_init(&s->srv, &s->geo, s->nvectors, s->region.fd);
    if (err) {
        error_setg_errno(errp, -err, "sivshm: cannot create eventfds");
        return;
    }
    s->server_init = true;
    if (s->creds) {
        const char *why;

        if (proto_creds_parse(s->creds, s->geo.nreducers, s->srv.allow,
                              &why)) {
            error_setg(errp, "sivshm: creds=%s: %s", s->creds, why);
            return;
        }
    }
    s->srv.peer_changed = sivshm_peer_changed;
    s->srv.log = sivshm_server_log;
    s->srv.opaque = s;
    if (!s->unlink) {
        s->srv.adopt_slot = sivshm_adopt_slot;
        s->exit_notifier.notify = sivshm_exit_notify;
        qemu_add_exit_notifier(&s->exit_notifier);
        s->save_at_exit = true;
    }
    for (uint32_t j = 1; j <= s->geo.nreducers; j++) {
        for (uint32_t v = 0; v < s->nvectors; v++) {
            sivshm_init_in(s, j, v, s->srv.peer[j].in_fd[v]);
            sivshm_watch_in(s, j, v, true);
        }
    }
    err = proto_server_listen(&s->srv, s->socket_path);
    if (err) {
        error_setg_errno(errp, -err, "sivshm: cannot listen on %s",
                         s->socket_path);
        return;
    }
    s->hello_timer = timer_new_ms(QEMU_CLOCK_REALTIME, sivshm_hello_timeout,
                                  s);
    /* Reducers come later: nobody is waited for here. */
    sivshm_server_rewatch(s);
}

/* Reducer: forget the mapper's eventfds. */
static void sivshm_reducer_unbind(SivshmState *s)
{
    if (!s->out_bound[0]) {
        return;
    }
    sivshm_unbind_out(s, 0);
    for (uint32_t v = 0; v < s->nvectors; v++) {
        event_notifier_cleanup(&s->out[0][v]);
    }
}

static void sivshm_reducer_close(SivshmState *s)
{
    if (s->sock >= 0) {
        qemu_set_fd_handler(s->sock, NULL, NULL, NULL);
        close(s->sock);
        s->sock = -1;
    }
}

static void sivshm_rejoin_later(SivshmState *s)
{
    timer_mod(s->rejoin_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->rejoin_ms);
    s->rejoin_ms = MIN(s->rejoin_ms * 2, PROTO_REJOIN_MAX_MS);
}

static void sivshm_reducer_gone(void *opaque)
{
    SivshmState *s = opaque;

    /* The mapper never speaks after WELCOME: readable means it left. */
    sivshm_reducer_close(s);
    warn_report("sivshm: the mapper at %s went away; reducer %u will "
                "rejoin it when it is back", s->socket_path, s->id);
    sivshm_reducer_unbind(s);
    s->peers = 0;
    sivshm_peer_event(s);
    s->rejoin_ms = PROTO_REJOIN_MIN_MS;
    s->rejoin_warned = false;
    sivshm_rejoin_later(s);
}

/* Put the slot @fd (ours on success) behind BAR1, and remember the file. */
static bool sivshm_reducer_map_slot(SivshmState *s, int fd, Error **errp)
{
    Error *local_err = NULL;
    struct stat st;

    if (fstat(fd, &st) < 0) {
        error_setg_errno(errp, errno, "sivshm: fstat of the slot");
        return false;
    }
    memory_region_init_ram_from_fd(&s->slot_mr[0], OBJECT(s), "sivshm.slot",
                                   s->geo.slice_size, RAM_SHARED, fd, 0,
                                   &local_err);
    if (local_err) {
        error_propagate(errp, local_err);
        return false;
    }
    s->slot_dev = st.st_dev;
    s->slot_ino = st.st_ino;
    memory_region_add_subregion(&s->bar1, 0, &s->slot_mr[0]);
    s->nslots = 1;
    return true;
}

/*
 * The mapper answered our HELLO.  The first answer of a reducer that
 * started on its own brings the slot, which must have the geometry that
 * sized BAR1.  After that only the same slot may come back: the guest's
 * BAR1 maps it, and a mapper that returns with other memory (unlink=on,
 * another size) is not this VM's to rejoin.
 */
static void sivshm_rejoin_answer(void *opaque)
{
    SivshmState *s = opaque;
    char reason[PROTO_REASON_LEN];
    int fds[PROTO_MAX_FDS];
    struct proto_msg welcome;
    Error *local_err = NULL;
    bool first = !s->nslots;
    struct stat st;
    int err;

    qemu_set_fd_handler(s->sock, NULL, NULL, NULL);
    err = proto_client_recv_welcome(s->sock, s->id, s->nvectors, &welcome,
                                    fds, reason, sizeof(reason));
    if (err) {
        sivshm_reducer_close(s);
        if (err != -EAGAIN && err != -ECONNRESET && !s->rejoin_warned) {
            warn_report("sivshm: the mapper at %s refused reducer %u: %s",
                        s->socket_path, s->id, *reason ? reason
                                                       : strerror(-err));
            s->rejoin_warned = true;
        }
        sivshm_rejoin_later(s);
        return;
    }
    timer_del(s->rejoin_timer);
    if (welcome.welcome.slice_size != s->geo.slice_size ||
        welcome.welcome.region_size != s->geo.region_size ||
        welcome.welcome.nreducers != s->geo.nreducers ||
        (!first && (fstat(fds[0], &st) < 0 || st.st_dev != s->slot_dev ||
                    st.st_ino != s->slot_ino))) {
        if (first) {
            warn_report("sivshm: the mapper at %s has %u reducers of %"
                        PRIu64 " bytes, not the %u of %" PRIu64 " that "
                        "reducer %u was given: it stays apart",
                        s->socket_path, welcome.welcome.nreducers,
                        (uint64_t)welcome.welcome.slice_size,
                        s->geo.nreducers, s->geo.slice_size, s->id);
        } else {
            warn_report("sivshm: the mapper at %s came back with another "
                        "region; reducer %u keeps its old slice, apart: "
                        "restart this VM to join the new one",
                        s->socket_path, s->id);
        }
        proto_close_fds(fds, 1 + s->nvectors);
        sivshm_reducer_close(s);
        return;
    }
    if (first) {
        if (!sivshm_reducer_map_slot(s, fds[0], &local_err)) {
            warn_report_err(local_err);
            proto_close_fds(fds, 1 + s->nvectors);
            sivshm_reducer_close(s);
            return;
        }
    } else {
        close(fds[0]);          /* BAR1 maps this file already */
    }
    sivshm_bind_out(s, 0, fds + 1);
    s->peers = 1;
    qemu_set_fd_handler(s->sock, sivshm_reducer_gone, NULL, s);
    info_report("sivshm: reducer %u %s the mapper at %s", s->id,
                first ? "joined" : "rejoined", s->socket_path);
    sivshm_peer_event(s);
}

/* Reducer, no mapper: connect and say HELLO, without blocking. */
static void sivshm_rejoin_try(void *opaque)
{
    SivshmState *s = opaque;
    int own[SIVSHM_MAX_VECTORS], slot;
    char reason[PROTO_REASON_LEN];

    sivshm_reducer_close(s);    /* a HELLO that went unanswered */
    s->sock = proto_client_connect(s->socket_path, 0);
    if (s->sock < 0) {
        s->sock = -1;
        sivshm_rejoin_later(s);
        return;
    }
    if (proto_client_check_mapper(s->sock, s->check_mapper ? &s->mapper_want
                                                           : NULL,
                                  reason, sizeof(reason))) {
        if (!s->rejoin_warned) {
            warn_report("sivshm: reducer %u will not join the mapper at %s: "
                        "%s", s->id, s->socket_path, reason);
            s->rejoin_warned = true;
        }
        sivshm_reducer_close(s);
        sivshm_rejoin_later(s);
        return;
    }
    /* The same eventfds as before: our irqfds stay as they are. */
    for (uint32_t v = 0; v < s->nvectors; v++) {
        own[v] = event_notifier_get_fd(&s->in[0][v].n);
    }
    /* And the slot we map: a restarted unlink=off mapper takes it back. */
    slot = s->nslots ? memory_region_get_fd(&s->slot_mr[0]) : -1;
    if (proto_client_send_hello(s->sock, s->id, s->nvectors, own, slot)) {
        sivshm_reducer_close(s);
        sivshm_rejoin_later(s);
        return;
    }
    qemu_set_fd_handler(s->sock, sivshm_rejoin_answer, NULL, s);
    timer_mod(s->rejoin_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + PROTO_REJOIN_ANSWER_MS);
}

/*
 * A reducer given the job's size and reducer count knows its slice before
 * any mapper answers: realize sizes BAR1 and returns, and the device joins
 * in the background, as it rejoins.  Without them, realize waits for the
 * mapper's WELCOME (at most timeout ms) to learn the slice.
 */
static void sivshm_reducer_realize(SivshmState *s, Error **errp)
{
    int own[SIVSHM_MAX_VECTORS], fds[PROTO_MAX_FDS];
    char reason[PROTO_REASON_LEN] = "";
    struct proto_msg welcome;
    bool background = s->size || s->nreducers;

    if (s->id > SIVSHM_MAX_REDUCERS) {
        error_setg(errp, "sivshm: id %u is above %u", s->id,
                   SIVSHM_MAX_REDUCERS);
        return;
    }
    if (s->creds) {
        error_setg(errp, "sivshm: creds are the mapper's (vm-id=0) to set");
        return;
    }
    if (s->mapper_cred) {
        if (proto_cred_parse(s->mapper_cred, &s->mapper_want)) {
            error_setg(errp, "sivshm: mapper-cred=%s is not UID:GID (each "
                       "a number or *)", s->mapper_cred);
            return;
        }
        s->check_mapper = true;
    }
    if (background) {
        if (sivshm_geometry_init(&s->geo, s->size, s->nreducers,
                                 qemu_real_host_page_size())) {
            error_setg(errp, "sivshm: %" PRIu64 " bytes cannot be cut into "
                       "%u slices", s->size, s->nreducers + 1);
            return;
        }
        if (s->id > s->geo.nreducers) {
            error_setg(errp, "sivshm: id %u is above the %u reducers",
                       s->id, s->geo.nreducers);
            return;
        }
    }
    for (uint32_t v = 0; v < s->nvectors; v++) {
        own[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (own[v] < 0) {
            error_setg_errno(errp, errno, "sivshm: eventfd");
            return;
        }
        sivshm_init_in(s, 0, v, own[v]);    /* teardown closes it */
    }
    s->rejoin_timer = timer_new_ms(QEMU_CLOCK_REALTIME, sivshm_rejoin_try, s);

    if (background) {
        /* BAR1 holds our slice at 0, once the mapper has sent it. */
        memory_region_init(&s->bar1, OBJECT(s), "sivshm.bar1",
                           pow2ceil(s->geo.slice_size));
        for (uint32_t v = 0; v < s->nvectors; v++) {
            sivshm_watch_in(s, 0, v, true);
        }
        s->rejoin_ms = PROTO_REJOIN_MIN_MS;
        timer_mod(s->rejoin_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
        return;
    }

    s->sock = proto_client_join(s->socket_path, s->id, s->nvectors, own,
                                s->check_mapper ? &s->mapper_want : NULL,
                                s->timeout_ms, &welcome, fds, reason,
                                sizeof(reason));
    if (s->sock < 0) {
        error_setg_errno(errp, -s->sock, "sivshm: reducer %u could not join "
                         "the mapper at %s within %u ms%s%s", s->id,
                         s->socket_path, s->timeout_ms,
                         *reason ? ": " : "", reason);
        s->sock = -1;
        return;
    }
    s->geo.slice_size = welcome.welcome.slice_size;
    s->geo.region_size = welcome.welcome.region_size;
    s->geo.nreducers = welcome.welcome.nreducers;

    /* BAR1 holds our slice at 0 and nothing behind the rest. */
    memory_region_init(&s->bar1, OBJECT(s), "sivshm.bar1",
                       pow2ceil(s->geo.slice_size));
    if (!sivshm_reducer_map_slot(s, fds[0], errp)) {
        proto_close_fds(fds, 1 + s->nvectors);
        return;
    }
    sivshm_bind_out(s, 0, fds + 1);
    for (uint32_t v = 0; v < s->nvectors; v++) {
        sivshm_watch_in(s, 0, v, true);
    }
    s->peers = 1;
    qemu_set_fd_handler(s->sock, sivshm_reducer_gone, NULL, s);
}

/* A slot in bar1 holds a reference on us: take them out, or we never go. */
static void sivshm_del_slots(SivshmState *s)
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
    if (sivshm_is_mapper(s)) {
        for (uint32_t j = 1; j <= s->geo.nreducers; j++) {
            sivshm_unbind_out(s, j);
        }
        for (unsigned int i = 0; i < s->nwatched; i++) {
            qemu_set_fd_handler(s->watched[i], NULL, NULL, NULL);
        }
        s->nwatched = 0;
        if (s->hello_timer) {
            timer_free(s->hello_timer);
            s->hello_timer = NULL;
        }
        if (s->server_init) {
            for (uint32_t j = 1; j <= s->geo.nreducers; j++) {
                for (uint32_t v = 0; v < s->nvectors; v++) {
                    sivshm_watch_in(s, j, v, false);
                }
            }
            proto_server_fini(&s->srv);     /* closes their fds */
            s->server_init = false;
        }
        sivshm_del_slots(s);
        if (s->save_at_exit) {
            qemu_remove_exit_notifier(&s->exit_notifier);
            s->save_at_exit = false;
            sivshm_save(s);
        }
        if (s->region_open) {
            sivshm_region_close(&s->region, s->shm_id, s->dir, 0);
            s->region_open = false;
        }
    } else {
        sivshm_del_slots(s);
        if (s->rejoin_timer) {
            timer_free(s->rejoin_timer);
            s->rejoin_timer = NULL;
        }
        sivshm_reducer_close(s);
        sivshm_reducer_unbind(s);
        for (uint32_t v = 0; v < s->nvectors; v++) {
            SivshmIn *in = &s->in[0][v];

            if (in->s) {
                qemu_set_fd_handler(event_notifier_get_fd(&in->n), NULL,
                                    NULL, NULL);
                event_notifier_cleanup(&in->n);
                in->s = NULL;
            }
        }
    }
    if (s->migration_blocker) {
        migrate_del_blocker(s->migration_blocker);
        error_free(s->migration_blocker);
        s->migration_blocker = NULL;
    }
}

static void sivshm_realize(PCIDevice *pdev, Error **errp)
{
    SivshmState *s = SIVSHM(pdev);
    Error *local_err = NULL;

    if (!s->shm_id || !s->socket_path) {
        error_setg(errp, "sivshm: shm and socket must be set");
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
    if (migrate_add_blocker(s->migration_blocker, errp) < 0) {
        error_free(s->migration_blocker);
        s->migration_blocker = NULL;
        return;
    }

    memory_region_init_io(&s->mmio, OBJECT(s), &sivshm_mmio_ops, s,
                          "sivshm.mmio", SIVSHM_BAR0_SIZE);
    if (sivshm_is_mapper(s)) {
        sivshm_mapper_realize(s, &local_err);
    } else {
        sivshm_reducer_realize(s, &local_err);
    }
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

static void sivshm_reset(DeviceState *dev)
{
    SivshmState *s = SIVSHM(dev);

    /* MSI-X is reset after this: the routes go with it. */
    sivshm_irqfd_off(s);
    s->intr_mask = 0;
    s->intr_status = 0;
}

static Property sivshm_properties[] = {
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
    DEFINE_PROP_END_OF_LIST(),
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
    device_class_set_props(dc, sivshm_properties);
    dc->reset = sivshm_reset;
    dc->desc = "Secure sliced inter-VM shared memory";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo sivshm_types[] = {
    {
        .name          = TYPE_SIVSHM,
        .parent        = TYPE_PCI_DEVICE,
        .instance_size = sizeof(SivshmState),
        .class_init    = sivshm_class_init,
        .interfaces    = (InterfaceInfo[]) {
            { INTERFACE_CONVENTIONAL_PCI_DEVICE },
            { },
        },
    },
};

DEFINE_TYPES(sivshm_types)
