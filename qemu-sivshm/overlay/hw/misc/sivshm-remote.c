/*
 * SIVSHM: a reducer's role when its mapper is on another host
 * (remote=HOST:PORT, key-secret=ID).  libsivshm's remote-reducer backend,
 * compiled in from sivshm-lib/, joins over RDMA, proves the key and keeps
 * the slot in step: BAR1 maps the library's copy of the slot, the
 * mapper's interrupts come on the library's eventfds (irqfd under KVM as
 * for a local reducer), and a thread of ours turns each doorbell into a
 * sivshm_notify(), which writes the slot back to the mapper and waits for
 * its acknowledgement: never on a vCPU thread.
 *
 * The guest sees a reducer like any other.  A lost mapper shows as a peer
 * change with the mapper gone; there is no rejoining on the same device
 * (unplug it and plug a new one).
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/eventfd.h>
#include "qemu/host-utils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "crypto/secret_common.h"

#include "sivshm-lib/sivshm.h"
#include "sivshm-internal.h"

/*
 * How often the doorbell thread looks at the connection when no doorbell
 * rings: the longest a lost mapper goes unnoticed by the guest after the
 * library noticed it.
 */
#define SIVSHM_REMOTE_PEER_POLL_MS 250

/* libsivshm's log lines (a refused key, a lost mapper) go to QEMU's. */
static void sivshm_remote_log(const char *msg)
{
    warn_report("sivshm: %s", msg);
}

/* The doorbell thread saw the mapper gone: tell the guest. */
static void sivshm_remote_lost(void *opaque)
{
    SivshmState *s = opaque;

    warn_report("sivshm: reducer %u lost its mapper at %s; unplug the "
                "device and plug a new one to join again", s->id, s->remote);
    s->peers = 0;
    sivshm_peer_event(s);
}

/*
 * Each doorbell the guest rings (its eventfd written by KVM's ioeventfd or
 * by the MMIO handler) becomes a notify of the whole slot: the guest's
 * driver names no range.
 */
static void *sivshm_remote_doorbells(void *opaque)
{
    SivshmState *s = opaque;
    struct pollfd pfd[1 + SIVSHM_MAX_VECTORS];
    bool connected = true;
    bool warned = false;
    uint64_t peers;

    pfd[0] = (struct pollfd){
        .fd = event_notifier_get_fd(&s->doorbell_stop), .events = POLLIN };
    for (uint32_t v = 0; v < s->nvectors; v++) {
        pfd[1 + v] = (struct pollfd){
            .fd = event_notifier_get_fd(&s->out[0][v]), .events = POLLIN };
    }
    for (;;) {
        if (poll(pfd, 1 + s->nvectors, SIVSHM_REMOTE_PEER_POLL_MS) < 0 &&
            errno != EINTR) {
            /* No more doorbells: the guest must not wait for answers. */
            error_report("sivshm: reducer %u's doorbells: poll: %s", s->id,
                         strerror(errno));
            if (connected) {
                qemu_bh_schedule(s->lost_bh);
            }
            break;
        }
        if (pfd[0].revents) {
            break;
        }
        for (uint32_t v = 0; v < s->nvectors; v++) {
            int err;

            /* A notify can wait seconds for the mapper: unplug waits less. */
            if (qatomic_read(&s->doorbell_quit)) {
                return NULL;
            }
            if (!(pfd[1 + v].revents & POLLIN) ||
                !event_notifier_test_and_clear(&s->out[0][v])) {
                continue;
            }
            err = sivshm_notify(s->lib, 0, v);
            if (err && connected && !warned) {
                warn_report("sivshm: reducer %u's doorbell %u did not reach "
                            "the mapper: %s", s->id, v, strerror(-err));
                warned = true;
            }
        }
        if (connected && !sivshm_peers(s->lib, &peers) && !peers) {
            connected = false;
            qemu_bh_schedule(s->lost_bh);
        }
    }
    return NULL;
}

/* The key of our id, from the secret object @s->key_secret names. */
static bool sivshm_remote_key(SivshmState *s, uint8_t key[SIVSHM_KEY_BYTES],
                              Error **errp)
{
    g_autofree char *hex = NULL;
    size_t len;
    int err;

    hex = qcrypto_secret_lookup_as_utf8(s->key_secret, errp);
    if (!hex) {
        return false;
    }
    len = strlen(hex);          /* g_strstrip() moves the key left */
    err = sivshm_key_parse(g_strstrip(hex), key);
    explicit_bzero(hex, len);
    if (err) {
        explicit_bzero(key, SIVSHM_KEY_BYTES);
        error_setg(errp, "sivshm: secret %s is not a key: %u hexadecimal "
                   "digits", s->key_secret, 2 * SIVSHM_KEY_BYTES);
        return false;
    }
    return true;
}

/* Join the mapper at s->remote; BAR1 is our copy of the slot. */
static void sivshm_remote_realize(SivshmState *s, Error **errp)
{
    uint8_t key[SIVSHM_KEY_BYTES];
    struct sivshm_info info;
    int out[SIVSHM_MAX_VECTORS];
    void *slot;
    int err;

    if (s->id > SIVSHM_MAX_REDUCERS) {
        error_setg(errp, "sivshm: id %u is above %u", s->id,
                   SIVSHM_MAX_REDUCERS);
        return;
    }
    if (s->creds || s->mapper_cred) {
        error_setg(errp, "sivshm: creds and mapper-cred are a local peer's: "
                   "a remote reducer and its mapper prove a key");
        return;
    }
    /*
     * The geometry is the operator's, not the mapper's to choose: the
     * library allocates, pins and reads the slot before we see it.
     */
    if (!s->size || !s->nreducers ||
        sivshm_geometry_init(&s->geo, s->size, s->nreducers,
                             qemu_real_host_page_size())) {
        error_setg(errp, "sivshm: remote needs size and reducers, the "
                   "mapper's region cut into reducers + 1 slices (%" PRIu64
                   " bytes into %u)", s->size, s->nreducers + 1);
        return;
    }
    if (s->id > s->geo.nreducers) {
        error_setg(errp, "sivshm: id %u is above the %u reducers", s->id,
                   s->geo.nreducers);
        return;
    }
    if (!s->timeout_ms || s->timeout_ms > INT_MAX) {
        error_setg(errp, "sivshm: timeout %u is not 1..%d ms", s->timeout_ms,
                   INT_MAX);
        return;
    }
    if (!s->key_secret) {
        error_setg(errp, "sivshm: remote needs key-secret, the id of a "
                   "secret object holding reducer %u's key", s->id);
        return;
    }
    if (!sivshm_remote_key(s, key, errp)) {
        return;
    }
    sivshm_set_logger(sivshm_remote_log);
    err = sivshm_reducer_connect_checked(&s->lib, s->remote, s->id,
                                         s->nvectors, key, 0, s->timeout_ms,
                                         s->geo.slice_size);
    explicit_bzero(key, sizeof(key));
    if (err) {
        s->lib = NULL;
        error_setg_errno(errp, -err, "sivshm: reducer %u could not join the "
                         "mapper at %s over RDMA", s->id, s->remote);
        return;
    }
    sivshm_get_info(s->lib, &info);
    if (info.slice_size != s->geo.slice_size ||
        info.region_size != s->geo.region_size ||
        info.nreducers != s->geo.nreducers) {
        error_setg(errp, "sivshm: the mapper at %s has %u reducers of %"
                   PRIu64 " bytes, not the %u of %" PRIu64 " that reducer %u "
                   "was given", s->remote, info.nreducers,
                   (uint64_t)info.slice_size, s->geo.nreducers,
                   s->geo.slice_size, s->id);
        return;
    }
    slot = sivshm_slot(s->lib, s->id);
    if (!slot) {
        error_setg(errp, "sivshm: reducer %u joined with no slot", s->id);
        return;
    }

    /* BAR1 holds our slice at 0 and nothing behind the rest. */
    memory_region_init(&s->bar1, OBJECT(s), "sivshm.bar1",
                       pow2ceil(s->geo.slice_size));
    memory_region_init_ram_ptr(&s->slot_mr[0], OBJECT(s), "sivshm.slot",
                               s->geo.slice_size, slot);
    memory_region_add_subregion(&s->bar1, 0, &s->slot_mr[0]);
    s->nslots = 1;

    /* The library's eventfds ring us; teardown closes our copies. */
    for (uint32_t v = 0; v < s->nvectors; v++) {
        int fd = qemu_dup(sivshm_eventfd(s->lib, 0, v));

        if (fd < 0) {
            error_setg_errno(errp, errno, "sivshm: dup of an eventfd");
            return;
        }
        sivshm_init_in(s, 0, v, fd);
        sivshm_watch_in(s, 0, v, true);
    }
    for (uint32_t v = 0; v < s->nvectors; v++) {
        out[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (out[v] < 0) {
            error_setg_errno(errp, errno, "sivshm: eventfd");
            while (v--) {
                close(out[v]);
            }
            return;
        }
    }
    sivshm_bind_out(s, 0, out);

    s->lost_bh = qemu_bh_new_guarded(sivshm_remote_lost, s,
                                     &DEVICE(s)->mem_reentrancy_guard);
    err = event_notifier_init(&s->doorbell_stop, false);
    if (err) {
        error_setg_errno(errp, -err, "sivshm: eventfd");
        return;
    }
    s->peers = 1;
    s->doorbells = true;
    qemu_thread_create(&s->doorbell_thread, "sivshm-doorbell",
                       sivshm_remote_doorbells, s, QEMU_THREAD_JOINABLE);
}

/* Undo sivshm_remote_realize() but the handle (sivshm_remote_finalize()). */
static void sivshm_remote_teardown(SivshmState *s)
{
    if (s->doorbells) {
        qatomic_set(&s->doorbell_quit, true);
        event_notifier_set(&s->doorbell_stop);
        qemu_thread_join(&s->doorbell_thread);
        event_notifier_cleanup(&s->doorbell_stop);
        s->doorbells = false;
    }
    if (s->lost_bh) {
        qemu_bh_delete(s->lost_bh);
        s->lost_bh = NULL;
    }
    sivshm_drop_out(s, 0);
    sivshm_drop_in(s, 0);
    sivshm_del_slots(s);
}

/*
 * BAR1's RAM is the handle's slot: it is freed, and the connection closed,
 * only once nothing can map it any more, when the device is finalized.
 */
void sivshm_remote_finalize(SivshmState *s)
{
    sivshm_close(s->lib);
    s->lib = NULL;
}

const SivshmRole sivshm_remote_role = {
    .realize = sivshm_remote_realize,
    .teardown = sivshm_remote_teardown,
};
