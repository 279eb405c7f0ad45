/*
 * perf_events.h - the perf sensor's events (perf_events.c), for the
 * sensor (perf.c).  Internal to the library's modules.
 */
#ifndef PA_PERF_EVENTS_H
#define PA_PERF_EVENTS_H

#include "powerapi.h"

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* perf_event_open(2); the new descriptor, or -1 with errno. */
long pa__perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
                         unsigned long flags);
/* Fills attr for the event name (libpfm4's syntax, or a name of the
 * generic table), counting user space only when user_only.  0, or
 * -ENOENT (unknown name; why says so) or -EINVAL (bad modifier).  Thread
 * safe (libpfm4 is initialised once). */
int pa__perf_event_encode(const char *name, bool user_only, struct perf_event_attr *attr, char *why,
                          size_t wl);
/* Opens ev on the calling thread to see whether the PMU has it: 0 or
 * -errno. */
int pa__perf_event_try(const struct perf_event_attr *ev);

/* Every event this machine's libpfm4 (and the generic kernel table) can
 * encode, with whether it opens on the calling thread (status 0, else
 * -errno: -ENOENT no such PMU event, -EACCES privilege), as
 * pa_perf_events_list gives them; cb returns 0 to go on or a negative
 * value to stop (returned).  The number of events listed. */
int pa__perf_events_list(pa_perf_event_cb cb, void *user);

#endif
