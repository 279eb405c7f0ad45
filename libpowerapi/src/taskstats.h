/*
 * taskstats.h - the kernel's exit records (taskstats.c), for the sensor
 * that discovers tasks.  Not installed.
 */
#ifndef PA_TASKSTATS_H
#define PA_TASKSTATS_H

#include "powerapi.h"

#include <stddef.h>
#include <stdint.h>

typedef struct pa__taskstats pa__taskstats;

/* Registers an exit listener on every CPU.  0, or -errno with why set
 * (no taskstats in the kernel, refused without CAP_NET_ADMIN). */
int pa__taskstats_open(pa__taskstats **out, char *why, size_t len);
/* Hands every record received since the last call to the frame
 * (pa_frame_task_exit) and names the source (pa_frame_exits_source).
 * Never blocks.  Returns the records handed, or -errno. */
int pa__taskstats_drain(pa__taskstats *t, pa_frame *f);
/* Deregisters and closes; NULL is a no-op. */
void pa__taskstats_close(pa__taskstats *t);

#endif /* PA_TASKSTATS_H */
