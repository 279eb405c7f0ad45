/*
 * output.h - writers of pa_report as JSON lines, CSV or a table.
 *
 * The formats are the contract of DESIGN.md section 8.  A rp_out carries
 * the destination and the little state a format needs between reports
 * (CSV header written, screen clearing); one rp_out per stream.  Used by
 * `monitor` and by every command that prints reports (`monitor --ring`,
 * `top`...).  Not thread-safe: one writer per rp_out.
 */
#ifndef PA_REPORT_OUTPUT_H
#define PA_REPORT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "powerapi.h"

typedef enum rp_out_format {
    RP_OUT_TABLE = 0,
    RP_OUT_CSV = 1,
    RP_OUT_JSON = 2,
} rp_out_format;

typedef struct rp_out {
    FILE *f;
    rp_out_format format;
    /* "time" = time_base_s + report time_ns / 1e9.  For live reports set
     * it to realtime - monotonic (rp_out_live_time_base) so times are
     * Unix epoch seconds; for explicit clocks leave it at 0. */
    double time_base_s;
    size_t top;              /* at most this many top-level targets, 0 = all */
    int clear;               /* table: clear the screen before each report */
    int command_columns;     /* csv: add the command record's columns */
    int quiet_targets;       /* table: system lines only */
    int fit_fd;              /* table: when >= 0 and top is 0, show as many
                                targets as fit this terminal's height */
    const char *procfs;      /* table: where a process's threads are counted
                                for its CPU% cap (NULL: /proc) */
    const char *group_type;  /* the type of cgroup records ("container"
                                under --group-by container), NULL: "cgroup" */
    int exited_list;         /* JSON, CSV: the processes born and gone in a
                                window one record each (pa_report.exited)
                                instead of the exited record */
    double carbon_g_per_kwh; /* > 0 (--carbon-intensity): grams of CO2e
                                beside joules (pa_carbon_g), the intensity
                                stated as an assumption; 0: none */
    /* private */
    int seekable;   /* f is a regular file: a failed record is cut off */
    long long good; /* its offset after the last whole record */
    int csv_header_done;
    size_t csv_ncounters;
    char **csv_counters;
    /* the components beyond cpu and nic of the header (registered
     * formulas'): columns power_w.NAME and energy_j.NAME */
    size_t csv_ncomps;
    char csv_comps[PA_MAX_COMPONENTS][16];
} rp_out;

/* The record keys of a cgroup's names (pa_cgroup_names), in the order of
 * the CSV columns: container_id, container_name, runtime, pod_name,
 * pod_namespace, pod_uid, unit. */
#define RP_OUT_NNAMES 7
extern const char *const rp_out_name_keys[RP_OUT_NNAMES];

/* A cgroup record's name for people: its container's name (or short ID),
 * else its pod ("pod NS/NAME"), else its unit, else the end of its path. */
void rp_out_cgroup_label(const pa_target_info *t, char *out, size_t len);
/* The row name of a PA_TARGET_EXITED record: "[exited: 1,204 processes]",
 * "[exited]" when its processes are not counted. */
void rp_out_exited_label(const pa_target_info *t, char *out, size_t len);

/* Parses "table", "csv" or "json".  Returns 0 or -EINVAL. */
int rp_out_parse_format(const char *s, rp_out_format *out);

/* Initialises o for stream f (not owned). */
void rp_out_init(rp_out *o, FILE *f, rp_out_format format);

/* Frees what the writer allocated (not the stream). */
void rp_out_fini(rp_out *o);

/* Realtime minus monotonic clock, in seconds. */
double rp_out_live_time_base(void);

/* Every writer below either writes whole records or fails with
 * -errno (-ENOSPC, -EPIPE, ...); on a regular file, a record that could
 * not be written whole is removed from it (the file ends with the last
 * whole record), so readers never see a partial line. */

/* Writes one report: JSON, one "system" line then one line per target;
 * CSV, one row each (header before the first); table, a screen sorted by
 * power.  Returns 0 or -EIO when the stream failed. */
int rp_out_report(rp_out *o, const pa_report *r);

/* The same into a malloc'd string (tests, the README's checks): NULL on
 * a failure. */
char *rp_out_report_text(const pa_report *r, rp_out_format fmt);

/* The end of `monitor -- COMMAND`. */
typedef struct rp_out_command {
    pid_t pid;
    int exit_status; /* what powerapi exits with (128+sig if killed) */
    int signal;      /* the signal that killed it, or 0 */
    double duration_s;
    pa_power energy;       /* tree totals: cpu_j, nic_j, total_j */
    double cpu_time_s;     /* tree CPU time over the run, if known, else <0 */
    char *const *argv;     /* the command, for the table summary */
    const pa_report *last; /* the last window (formula, assumptions), or
                              NULL */
} rp_out_command;

/* Writes the "command" record (table: a perf-stat-like summary). */
int rp_out_command_end(rp_out *o, const rp_out_command *c);

/* Writes a JSON number: fixed 6 decimals without trailing zeros, "null"
 * for NaN and infinities. */
void rp_out_json_number(FILE *f, double v);

/* The grams of CO2e of energy_j at --carbon-intensity g_per_kwh
 * (pa_carbon_g), for every output of the commands; NaN when no intensity
 * was given or the energy is unknown. */
double rp_out_co2e_g(double g_per_kwh, double energy_j);

/* What a report's cpu_source says in words: "measured" (RAPL), "measured
 * (host)" (the host's measurement of this VM, the host sensor), else
 * "modelled".  Thread-safe. */
const char *rp_out_source_words(const char *cpu_source);

#endif /* PA_REPORT_OUTPUT_H */
