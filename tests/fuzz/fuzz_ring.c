/* fuzz_ring.c - the ring reader on a corrupt shared-memory page.  Anyone
 * who can write the ring's /dev/shm object can write anything into it: a
 * reader must never crash or read out of its mapping.  The target makes a
 * real ring once (small: 4 windows of 4 targets, counters and cgroups),
 * publishes windows into it and keeps that image; each input is a list of
 * patches applied to a fresh copy of the image, then a reader opens the
 * ring, reads every window, aggregates them and reads its info.
 *
 * Input: patches of [offset: 4 bytes LE, taken modulo the ring's size]
 * [length: 1 byte] [length bytes]. */
#include "fuzz.h"

#include "powerapi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char name[64];
static pa_ring_writer *writer;
static unsigned char *image;
static size_t image_len;
static int shm_fd = -1;

static void cleanup(void)
{
    pa_ring_destroy(writer);
}

static void setup(void)
{
    snprintf(name, sizeof(name), "pa-fuzz-ring-%d", (int)getpid());
    pa_ring_opts o = {.capacity = 4, .max_targets = 4, .mode = 0600, .interval_ns = 1000000000ull};
    if (pa_ring_create(name, &o, &writer) < 0)
        fz_fail("pa_ring_create: %s", pa_last_error());
    atexit(cleanup);
    static const char *const cnames[] = {"cycles", "instructions"};
    static const double ctr[2][2] = {{1e9, 2e9}, {3e8, 1e8}};
    pa_target_info t[5];
    memset(t, 0, sizeof(t));
    for (int w = 1; w <= 6; w++) { /* wraps around the 4 slots */
        for (int i = 0; i < 5; i++) {
            t[i].type = i == 4 ? PA_TARGET_CGROUP : PA_TARGET_PROCESS;
            t[i].pid = i == 4 ? 0 : 100 + i;
            snprintf(t[i].comm, sizeof(t[i].comm), "proc%d", i);
            t[i].cgroup = i % 2 ? "/system.slice/a.service" : "/user.slice";
            t[i].power.cpu_w = t[i].power.total_w = 1.0 + i + w;
            t[i].power.total_j = t[i].power.cpu_j = 10.0 * w;
            t[i].power.interval_s = 1.0;
            t[i].has_net = i == 1;
            t[i].net_rx_bytes = 1000u * (unsigned)w;
            t[i].counters = i < 2 ? ctr[i] : NULL;
            t[i].multiplex = 1.0;
        }
        pa_report r = {.tick = (uint64_t)w,
                       .time_ns = (uint64_t)w * 1000000000ull,
                       .interval_s = 1.0,
                       .formula = "cpu-tdp",
                       .sensors = "procfs-cpu+perf",
                       .cpu_source = "model",
                       .assumed = "tdp=15W; volt table",
                       .ntargets = 5,
                       .targets = t,
                       .ncounters = 2,
                       .counter_names = cnames};
        r.system.cpu_w = r.system.total_w = 20.0;
        r.system.total_j = 20.0 * w;
        if (pa_ring_publish(writer, &r) < 0)
            fz_fail("pa_ring_publish: %s", pa_last_error());
    }
    char path[128];
    snprintf(path, sizeof(path), "/%s", name);
    shm_fd = shm_open(path, O_RDWR | O_CLOEXEC, 0);
    struct stat st;
    if (shm_fd < 0 || fstat(shm_fd, &st) < 0)
        fz_fail("cannot open the ring's shm object");
    image_len = (size_t)st.st_size;
    image = malloc(image_len);
    if (!image || pread(shm_fd, image, image_len, 0) != (ssize_t)image_len)
        fz_fail("cannot read the ring image");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!writer)
        setup();
    /* a fresh copy of the image, the writer's heartbeat renewed */
    if (pwrite(shm_fd, image, image_len, 0) != (ssize_t)image_len)
        fz_fail("cannot restore the ring image");
    pa_ring_heartbeat(writer);
    unsigned char *map = mmap(NULL, image_len, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
    if (map == MAP_FAILED)
        fz_fail("mmap");
    size_t at = 0;
    while (at + 5 <= size) {
        uint32_t off;
        memcpy(&off, data + at, 4);
        size_t len = data[at + 4];
        at += 5;
        if (len > size - at)
            len = size - at;
        off %= (uint32_t)image_len;
        if (len > image_len - off)
            len = image_len - off;
        memcpy(map + off, data + at, len);
        at += len;
    }
    munmap(map, image_len);

    pa_ring_reader *r = NULL;
    int rc = pa_ring_open(name, &r);
    if (rc < 0) {
        if (!*pa_last_error())
            fz_fail("pa_ring_open: %d without a message", rc);
        return 0;
    }
    uint64_t seq = 0;
    const pa_report *rep;
    for (int i = 0; i < 16; i++) {
        rc = pa_ring_read(r, &seq, &rep);
        if (rc == -EAGAIN || rc == -EOWNERDEAD || rc == -EINVAL)
            break;
        if (rc < 0)
            continue;
        for (size_t k = 0; k < rep->ntargets; k++) {
            (void)strlen(rep->targets[k].comm);
            (void)strlen(rep->targets[k].cgroup);
            if (rep->targets[k].counters)
                for (size_t c = 0; c < rep->ncounters; c++)
                    (void)*(volatile const double *)&rep->targets[k].counters[c];
        }
        for (size_t c = 0; c < rep->ncounters; c++)
            (void)strlen(rep->counter_names[c]);
        (void)strlen(rep->formula);
        (void)strlen(rep->assumed);
    }
    seq = 0;
    if (pa_ring_aggregate(r, &seq, 0, &rep) == 0) {
        for (size_t k = 0; k < rep->ntargets; k++)
            (void)strlen(rep->targets[k].cgroup);
        for (size_t c = 0; c < rep->ncounters; c++)
            (void)strlen(rep->counter_names[c]);
    }
    seq = 0;
    (void)pa_ring_aggregate(r, &seq, 1500000000ull, &rep);
    pa_ring_info info;
    (void)pa_ring_get_info(r, &info);
    pa_ring_close(r);
    return 0;
}
