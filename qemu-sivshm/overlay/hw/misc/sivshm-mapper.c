/*
 * SIVSHM: the mapper's role (vm-id=0).  The region's slots behind BAR1,
 * libsivshm's server in QEMU's main loop, and, with unlink=off, the slots
 * reducers hand back and the save at exit.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#include "qemu/osdep.h"
#include "qemu/host-utils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "overlay-compat.h"

#include "sivshm-lib/cred.h"
#include "sivshm-lib/mapper.h"
#include "sivshm-internal.h"

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

static void G_GNUC_PRINTF(2, 0) sivshm_server_log(void *opaque,
                                                  const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    warn_report("sivshm: %s", msg);
}

static void sivshm_mapper_realize(SivshmState *s, Error **errp)
{
    struct proto_cred allow[SIVSHM_MAX_REDUCERS + 1];
    struct proto_mapper_conf conf = {
        .size = s->size,
        .nreducers = s->nreducers,
        .nvectors = s->nvectors,
        .page_size = qemu_real_host_page_size(),
        .name = s->shm_id,
        .dir = s->dir,
        .persist = !s->unlink,
        .socket_path = s->socket_path,
        .peer_changed = sivshm_peer_changed,
        .adopt_slot = sivshm_adopt_slot,
        .log = sivshm_server_log,
        .opaque = s,
    };
    enum proto_mapper_step failed;
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
    if (!s->unlink && !s->dir) {
        error_setg(errp, "sivshm: unlink=off needs a backing dir");
        return;
    }
    err = proto_mapper_open(&conf, &s->geo, &s->region, &failed);
    if (err && failed == PROTO_MAPPER_GEOMETRY) {
        error_setg(errp, "sivshm: %" PRIu64 " bytes cannot be cut into %u "
                   "slices (at most %u reducers and %llu bytes, at least a "
                   "page per slot)", s->size, s->nreducers + 1,
                   SIVSHM_MAX_REDUCERS, SIVSHM_MAX_REGION);
        return;
    }
    if (err) {
        error_setg_errno(errp, -err, "sivshm: cannot create the slots of %s",
                         s->shm_id);
        return;
    }
    s->region_open = true;
    if (s->creds) {
        const char *why;

        for (uint32_t j = 0; j <= SIVSHM_MAX_REDUCERS; j++) {
            allow[j].uid = allow[j].gid = PROTO_CRED_ANY;
        }
        if (proto_creds_parse(s->creds, s->geo.nreducers, allow, &why)) {
            error_setg(errp, "sivshm: creds=%s: %s", s->creds, why);
            return;
        }
        conf.allow = allow;
    }

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

    err = proto_mapper_serve(&conf, &s->geo, &s->region, &s->srv, &failed);
    if (err && failed == PROTO_MAPPER_EVENTFDS) {
        error_setg_errno(errp, -err, "sivshm: cannot create eventfds");
        return;
    }
    if (err) {
        error_setg_errno(errp, -err, "sivshm: cannot listen on %s",
                         s->socket_path);
        return;
    }
    s->server_init = true;
    if (!s->unlink) {
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
    s->hello_timer = timer_new_ms(QEMU_CLOCK_REALTIME, sivshm_hello_timeout,
                                  s);
    /* Reducers come later: nobody is waited for here. */
    sivshm_server_rewatch(s);
}

/* Undo sivshm_mapper_realize(), in reverse order (sivshm_teardown()). */
static void sivshm_mapper_teardown(SivshmState *s)
{
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
}

const SivshmRole sivshm_mapper_role = {
    .realize = sivshm_mapper_realize,
    .teardown = sivshm_mapper_teardown,
};
