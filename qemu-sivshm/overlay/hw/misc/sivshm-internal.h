/*
 * SIVSHM: what the device's files share (sivshm.c, the PCI device, its
 * registers and interrupts; sivshm-mapper.c, sivshm-reducer.c and
 * sivshm-remote.c, the three roles).  Private to them.
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 */

#ifndef HW_MISC_SIVSHM_INTERNAL_H
#define HW_MISC_SIVSHM_INTERNAL_H

#include "qemu/event_notifier.h"
#include "qemu/notify.h"
#include "qemu/thread.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "overlay-compat.h"

#include "sivshm-lib/client.h"
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

/*
 * A role: the mapper (vm-id=0), a reducer joined over the unix socket, or
 * a reducer joined over RDMA (remote=).  realize() sets BAR1, the
 * geometry and the eventfds up; teardown() undoes whatever of that was
 * done, on a realize that failed halfway as on unplug.
 */
typedef struct SivshmRole {
    void (*realize)(SivshmState *s, Error **errp);
    void (*teardown)(SivshmState *s);
} SivshmRole;

/* A doorbell vector delivered by KVM straight from the eventfds (irqfd). */
typedef struct SivshmVector {
    int virq;           /* its MSI route, -1 before the first use */
    bool irqfd;         /* the eventfds are attached to virq */
} SivshmVector;

struct SivshmState {
    PCIDevice parent_obj;
    const SivshmRole *role;

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
    char *remote;               /* reducer: the mapper's HOST:PORT (RDMA) */
    char *key_secret;           /* reducer: the secret object of its key */

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
    /*
     * Runs sivshm_join_try(): the first join of a reducer that joins in
     * the background, each rejoin after the mapper left, and the retry of
     * a HELLO that went unanswered.
     */
    QEMUTimer *join_timer;
    int join_ms;                /* the next retry's delay */
    bool join_warned;

    /*
     * remote reducer: libsivshm's handle, closed at finalize (BAR1 maps
     * its slot until then); the thread that turns doorbells into
     * notifies, and the bottom half it schedules when the mapper is lost.
     */
    struct sivshm *lib;
    QemuThread doorbell_thread;
    EventNotifier doorbell_stop;
    bool doorbells;             /* the thread runs */
    bool doorbell_quit;         /* teardown asks it to stop (atomic) */
    QEMUBH *lost_bh;
};

static inline bool sivshm_is_mapper(SivshmState *s)
{
    return s->id == 0;
}

/* sivshm.c: the eventfds we hear and ring, and the guest's view of them */
void sivshm_init_in(SivshmState *s, uint32_t peer, uint32_t vector, int fd);
void sivshm_watch_in(SivshmState *s, uint32_t peer, uint32_t vector, bool on);
void sivshm_bind_out(SivshmState *s, uint32_t peer, const int *fds);
void sivshm_unbind_out(SivshmState *s, uint32_t peer);
void sivshm_drop_out(SivshmState *s, uint32_t peer);
void sivshm_drop_in(SivshmState *s, uint32_t peer);
void sivshm_peer_event(SivshmState *s);
void sivshm_del_slots(SivshmState *s);

extern const SivshmRole sivshm_mapper_role;     /* sivshm-mapper.c */
extern const SivshmRole sivshm_reducer_role;    /* sivshm-reducer.c */
extern const SivshmRole sivshm_remote_role;     /* sivshm-remote.c */
void sivshm_remote_finalize(SivshmState *s);

#endif
