/*
 * perf_events.c - the events of the perf sensor (sensors/perf.c): names
 * encoded into perf_event_attr with libpfm4, or from the generic table of
 * kernel events without it; an event tried on the calling thread; and the
 * listing of the events this machine can count (pa_perf_events_list,
 * `powerapi events`).  No module table: a helper of the sensor, which the
 * events command reaches through the library's API.
 */
#include "perf_events.h"
#include "powerapi_module.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef PA_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

/* Generic kernel events: used without libpfm4, and for the XeMPower names
 * when libpfm4 does not know this CPU (it then has no model PMU table). */
static const struct generic {
    const char *name;
    uint32_t type;
    uint64_t config;
    const char *desc;
} generics[] = {
    {"UNHALTED_CORE_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
     "unhalted core cycles (generic hardware event)"},
    {"INSTRUCTIONS_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
     "instructions retired (generic hardware event)"},
    {"UNHALTED_REFERENCE_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES,
     "unhalted reference cycles (generic hardware event)"},
    {"LLC_REFERENCES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES,
     "last-level cache references (generic hardware event)"},
    {"LLC_MISSES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
     "last-level cache misses (generic hardware event)"},
    {"BRANCH_INSTRUCTIONS_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
     "branch instructions retired (generic hardware event)"},
    {"BRANCH_MISSES_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
     "mispredicted branches retired (generic hardware event)"},
    {"perf::CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "CPU cycles"},
    {"perf::INSTRUCTIONS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions"},
    {"perf::TASK-CLOCK", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
     "CPU time of the task, ns (software)"},
    {"perf::CPU-CLOCK", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "CPU clock, ns (software)"},
    {"perf::CONTEXT-SWITCHES", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
     "context switches (software)"},
    {"perf::CPU-MIGRATIONS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
     "migrations between CPUs (software)"},
    {"perf::PAGE-FAULTS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page faults (software)"},
    {"perf::MINOR-FAULTS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN,
     "minor page faults (software)"},
    {"perf::MAJOR-FAULTS", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ,
     "major page faults (software)"},
};
#define NGENERIC (sizeof(generics) / sizeof(generics[0]))

long pa__perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
                         unsigned long flags)
{
    return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

/* ---------------------------------------------------------------- */
/* Encoding                                                          */
/* ---------------------------------------------------------------- */

#ifdef PA_HAVE_LIBPFM
static pthread_once_t pfm_once = PTHREAD_ONCE_INIT;
static int pfm_status = PFM_ERR_NOINIT;

static void pfm_init_once(void)
{
    pfm_status = pfm_initialize();
}
#endif

static const struct generic *generic_find(const char *name)
{
    for (size_t i = 0; i < NGENERIC; i++)
        if (!strcasecmp(generics[i].name, name))
            return &generics[i];
    return NULL;
}

int pa__perf_event_encode(const char *name, bool user_only, struct perf_event_attr *attr, char *why,
                          size_t wl)
{
    memset(attr, 0, sizeof(*attr));
    const char *pfm_msg = "libpfm4 not built in";
#ifdef PA_HAVE_LIBPFM
    pthread_once(&pfm_once, pfm_init_once);
    if (pfm_status == PFM_SUCCESS) {
        pfm_perf_encode_arg_t arg;
        memset(&arg, 0, sizeof(arg));
        arg.attr = attr;
        arg.size = sizeof(arg);
        int plm = user_only ? PFM_PLM3 : PFM_PLM0 | PFM_PLM3;
        int r = pfm_get_os_event_encoding(name, plm, PFM_OS_PERF_EVENT_EXT, &arg);
        if (r == PFM_SUCCESS) {
            attr->size = sizeof(*attr);
            if (user_only) {
                attr->exclude_kernel = 1;
                attr->exclude_hv = 1;
            }
            return 0;
        }
        pfm_msg = pfm_strerror(r);
        if (r != PFM_ERR_NOTFOUND) {
            snprintf(why, wl,
                     "perf: event '%s' refused by libpfm4: %s; "
                     "'powerapi events' lists the events of this machine",
                     name, pfm_msg);
            return -EINVAL;
        }
        memset(attr, 0, sizeof(*attr));
    } else {
        pfm_msg = pfm_strerror(pfm_status);
    }
#endif
    const struct generic *g = generic_find(name);
    if (!g) {
        snprintf(why, wl,
                 "perf: unknown event '%s' (libpfm4: %s); "
                 "'powerapi events' lists the events this machine can "
                 "count",
                 name, pfm_msg);
        return -ENOENT;
    }
    attr->size = sizeof(*attr);
    attr->type = g->type;
    attr->config = g->config;
    if (user_only) {
        attr->exclude_kernel = 1;
        attr->exclude_hv = 1;
    }
    return 0;
}

int pa__perf_event_try(const struct perf_event_attr *ev)
{
    struct perf_event_attr a = *ev;
    a.disabled = 1;
    int fd = (int)pa__perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

/* ---------------------------------------------------------------- */
/* Event listing (powerapi events)                                   */
/* ---------------------------------------------------------------- */

static int list_one(const char *name, const char *desc, bool user_only, pa_perf_event_cb cb,
                    void *user)
{
    struct perf_event_attr a;
    char why[256];
    int rc = pa__perf_event_encode(name, user_only, &a, why, sizeof(why));
    if (rc == 0)
        rc = pa__perf_event_try(&a);
    return cb(name, desc ? desc : "", rc, user);
}

int pa__perf_events_list(pa_perf_event_cb cb, void *user)
{
    /* user space only when the kernel refuses more */
    struct perf_event_attr a;
    char why[256];
    pa__perf_event_encode("perf::TASK-CLOCK", false, &a, why, sizeof(why));
    int rc = pa__perf_event_try(&a);
    bool user_only = rc == -EACCES || rc == -EPERM;
    size_t n = 0;
    bool seen[NGENERIC] = {false};
#ifdef PA_HAVE_LIBPFM
    pthread_once(&pfm_once, pfm_init_once);
    if (pfm_status == PFM_SUCCESS) {
        pfm_pmu_t p;
        pfm_for_all_pmus(p)
        {
            pfm_pmu_info_t pi;
            memset(&pi, 0, sizeof(pi));
            pi.size = sizeof(pi);
            if (pfm_get_pmu_info(p, &pi) != PFM_SUCCESS || !pi.is_present ||
                p == PFM_PMU_PERF_EVENT_RAW)
                continue;
            for (int i = pi.first_event; i != -1; i = pfm_get_event_next(i)) {
                pfm_event_info_t ei;
                memset(&ei, 0, sizeof(ei));
                ei.size = sizeof(ei);
                if (pfm_get_event_info(i, PFM_OS_PERF_EVENT_EXT, &ei) != PFM_SUCCESS)
                    continue;
                char name[192];
                snprintf(name, sizeof(name), "%s::%s", pi.name, ei.name);
                /* libpfm4's perf:: names repeat the generic table: list
                 * each once, with the clearer description */
                const char *desc = ei.desc;
                const struct generic *g = generic_find(name);
                if (g) {
                    seen[g - generics] = true;
                    desc = g->desc;
                }
                rc = list_one(name, desc, user_only, cb, user);
                if (rc < 0)
                    return rc;
                n++;
            }
        }
    }
#endif
    for (size_t i = 0; i < NGENERIC; i++) {
        if (seen[i])
            continue;
        rc = list_one(generics[i].name, generics[i].desc, user_only, cb, user);
        if (rc < 0)
            return rc;
        n++;
    }
    return (int)n;
}

int pa_perf_events_list(pa_perf_event_cb cb, void *user)
{
    if (!cb)
        return pa_error_set(-EINVAL, "pa_perf_events_list: cb is required");
    return pa__perf_events_list(cb, user);
}
