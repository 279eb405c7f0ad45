/*
 * calib_cpufreq.h - the cpufreq control of a calibration (calibrate.c,
 * `powerapi calibrate --frequencies`): the policies whose frequency can be
 * set, through scaling_setspeed under the userspace governor, else
 * scaling_max_freq.  What was written is restored by pa__fq_restore (at
 * the end, and by pa_calibrate_restore_cpufreq from a signal handler:
 * open/write/close only, async-signal-safe).  The saved values are
 * process-wide: one calibration at a time (calibrate.c sees to it).
 */
#ifndef PA_CALIB_CPUFREQ_H
#define PA_CALIB_CPUFREQ_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "powerapi.h"

#define PA__FQ_POLICIES 64

typedef struct pa__fq_ctl {
    size_t n; /* frequencies to calibrate at */
    uint64_t khz[PA_CURVE_FREQS];
    size_t npol; /* policies that can be set */
    char ctl[PA__FQ_POLICIES][PATH_MAX];
    char how[64];  /* the file written: scaling_setspeed or scaling_max_freq */
    char why[256]; /* stated once: why none */
} pa__fq_ctl;

/* A --frequencies list: none, or up to PA_CURVE_FREQS of min/mid/max/MHz
 * joined by ','. */
bool pa__fq_spec_ok(const char *spec);

/* The frequencies of spec (NULL: min,mid,max) that the policies under
 * sysfs let us set, into fq (fq->n 0 and fq->why said when none). */
void pa__fq_probe(const char *sysfs, const char *spec, pa__fq_ctl *fq);

/* Sets every controllable policy to khz, saving the first values.  0, or
 * -errno with the message. */
int pa__fq_set(pa__fq_ctl *fq, uint64_t khz);

/* Writes the saved values back (async-signal-safe). */
void pa__fq_restore(void);

#endif
