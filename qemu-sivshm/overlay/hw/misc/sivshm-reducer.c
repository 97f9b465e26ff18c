/*
 * SIVSHM: a reducer's role (vm-id=1..).  Its slot behind BAR1 and its
 * joins: the first (in realize, or in the background when the geometry is
 * given), and each rejoin after the mapper left.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#include "qemu/osdep.h"
#include <sys/eventfd.h>
#include "qemu/host-utils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"

#include "sivshm-lib/fds.h"
#include "sivshm-internal.h"

static void sivshm_reducer_close(SivshmState *s)
{
    if (s->sock >= 0) {
        qemu_set_fd_handler(s->sock, NULL, NULL, NULL);
        close(s->sock);
        s->sock = -1;
    }
}

static void sivshm_join_later(SivshmState *s)
{
    timer_mod(s->join_timer,
              qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->join_ms);
    s->join_ms = MIN(s->join_ms * 2, PROTO_REJOIN_MAX_MS);
}

static void sivshm_reducer_gone(void *opaque)
{
    SivshmState *s = opaque;

    /* The mapper never speaks after WELCOME: readable means it left. */
    sivshm_reducer_close(s);
    warn_report("sivshm: the mapper at %s went away; reducer %u will "
                "rejoin it when it is back", s->socket_path, s->id);
    sivshm_drop_out(s, 0);
    s->peers = 0;
    sivshm_peer_event(s);
    s->join_ms = PROTO_REJOIN_MIN_MS;
    s->join_warned = false;
    sivshm_join_later(s);
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
static void sivshm_join_answer(void *opaque)
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
        if (err != -EAGAIN && err != -ECONNRESET && !s->join_warned) {
            warn_report("sivshm: the mapper at %s refused reducer %u: %s",
                        s->socket_path, s->id, *reason ? reason
                                                       : strerror(-err));
            s->join_warned = true;
        }
        sivshm_join_later(s);
        return;
    }
    timer_del(s->join_timer);
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

/*
 * The join timer: no mapper yet, or no more; connect and say HELLO,
 * without blocking.  sivshm_join_answer() takes the answer.
 */
static void sivshm_join_try(void *opaque)
{
    SivshmState *s = opaque;
    int own[SIVSHM_MAX_VECTORS], slot;
    char reason[PROTO_REASON_LEN];

    sivshm_reducer_close(s);    /* a HELLO that went unanswered */
    s->sock = proto_client_connect(s->socket_path, 0);
    if (s->sock < 0) {
        s->sock = -1;
        sivshm_join_later(s);
        return;
    }
    if (proto_client_check_mapper(s->sock, s->check_mapper ? &s->mapper_want
                                                           : NULL,
                                  reason, sizeof(reason))) {
        if (!s->join_warned) {
            warn_report("sivshm: reducer %u will not join the mapper at %s: "
                        "%s", s->id, s->socket_path, reason);
            s->join_warned = true;
        }
        sivshm_reducer_close(s);
        sivshm_join_later(s);
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
        sivshm_join_later(s);
        return;
    }
    qemu_set_fd_handler(s->sock, sivshm_join_answer, NULL, s);
    timer_mod(s->join_timer,
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
    s->join_timer = timer_new_ms(QEMU_CLOCK_REALTIME, sivshm_join_try, s);

    if (background) {
        /* BAR1 holds our slice at 0, once the mapper has sent it. */
        memory_region_init(&s->bar1, OBJECT(s), "sivshm.bar1",
                           pow2ceil(s->geo.slice_size));
        for (uint32_t v = 0; v < s->nvectors; v++) {
            sivshm_watch_in(s, 0, v, true);
        }
        s->join_ms = PROTO_REJOIN_MIN_MS;
        timer_mod(s->join_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME));
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

/* Undo sivshm_reducer_realize(), in reverse order (sivshm_teardown()). */
static void sivshm_reducer_teardown(SivshmState *s)
{
    sivshm_del_slots(s);
    if (s->join_timer) {
        timer_free(s->join_timer);
        s->join_timer = NULL;
    }
    sivshm_reducer_close(s);
    sivshm_drop_out(s, 0);
    sivshm_drop_in(s, 0);
}

const SivshmRole sivshm_reducer_role = {
    .realize = sivshm_reducer_realize,
    .teardown = sivshm_reducer_teardown,
};
