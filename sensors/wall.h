/*
 * wall.h - what the whole machine's meters hand the platform formula
 * (formulas/platform.c; issue 46, DESIGN.md section 19): the acpi-power
 * sensor (hwmon power_meter), ipmi (DCMI through the kernel's IPMI
 * device), redfish (a BMC's Redfish service) and http-meter (a smart
 * plug's or PDU's JSON or Prometheus reading) put a pa_wall_reading in
 * the frame under their own name.  Their parsers
 * (fuzzed: tests/fuzz/fuzz_wall.c), the IPMI reader (sensors/ipmi.c) and
 * the poller they share (sensors/wall_http.c).  Public module API only.
 */
#ifndef PA_SENSORS_WALL_H
#define PA_SENSORS_WALL_H

#include <stddef.h>
#include <stdint.h>

#include "powerapi.h"

/* One reading of the whole machine's power, as a frame key's value. */
typedef struct pa_wall_reading {
    double power_w;    /* the meter's figure */
    double avg_s;      /* the window it averages over, ending when it was
                          taken (0: an instant, or the meter does not say) */
    double age_s;      /* how old it is at the frame's time (its latency) */
    uint64_t seq;      /* grows with each new reading (a slow poll repeats) */
    uint64_t frame_ns; /* the frame's time (the tick's clock) */
    char meter[96];    /* which: "hwmon2 (power_meter)", "/redfish/v1/Chassis/1U/Power" */
    char how[96];      /* what the figure is: "power1_average, 1.000 s average" */
} pa_wall_reading;

/* The frame keys of the wall sensors, in the order the formula prefers. */
#define PA_WALL_KEYS                                                                               \
    {                                                                                              \
        "acpi-power", "ipmi", "redfish", "http-meter"                                              \
    }
#define PA_WALL_NKEYS 4

/* ---- parsers (pure, thread-safe) ---- */

/* The number at path in a JSON text ("PowerControl.0.PowerConsumedWatts":
 * object keys and array indexes separated by dots): 0, -EINVAL (not
 * JSON), -ENOENT (no such value), -ERANGE (not a finite number). */
int pa_wall_json_number(const char *text, size_t len, const char *path, double *out);
/* The @odata.id of the object at path ("Power", "Members.0"): 0, or
 * -EINVAL / -ENOENT as above, -ERANGE when it does not fit out. */
int pa_wall_json_link(const char *text, size_t len, const char *path, char *out, size_t outlen);
/* The value of a Prometheus text-format sample: metric names a series,
 * with its labels as they are written ("pdu_power_watts{outlet=\"3\"}")
 * or without (its first series).  0, -ENOENT, -ERANGE. */
int pa_wall_prom_number(const char *text, size_t len, const char *metric, double *out);
/* An hwmon attribute's decimal value (one line, unsigned): 0 or -EINVAL. */
int pa_wall_hwmon_value(const char *text, unsigned long long *out);

/* The ACPI power meters under sysfs (hwmon devices named "power_meter"):
 * their power1_average summed into r (µW; power1_average_interval, ms,
 * into avg_s), the meters named in r->meter.  Their count (0: none), or
 * -errno with why. */
int pa_wall_acpi_read(const char *sysfs, pa_wall_reading *r, char *why, size_t len);

/* ---- IPMI DCMI (sensors/ipmi.c) ---- */

/* DCMI "Get Power Reading" (DCMI 1.5 section 6.6.1, NetFn 0x2C, command
 * 0x02, mode 1: system power statistics), as the BMC answers it. */
typedef struct pa_dcmi_power {
    unsigned cur_w, min_w, max_w, avg_w; /* over the statistics period */
    uint32_t bmc_time_s;                 /* the BMC's timestamp of the reading */
    uint32_t period_ms;                  /* the statistics reporting period */
    int active;                          /* power measurement active (state bit 6) */
} pa_dcmi_power;

/* Parses a response's bytes (completion code first, as the kernel hands
 * them): 0, -EINVAL (short, or not the DCMI group 0xDC), -EIO (a
 * completion code other than 0: *code gets it, when code is not NULL),
 * -ENODATA (the measurement is not active).  Pure. */
int pa_dcmi_power_parse(const uint8_t *b, size_t n, pa_dcmi_power *out, int *code);

/* The calls the IPMI reader makes on the kernel's device (open, ioctl,
 * poll, close); NULL: the system's.  A test or fuzz target gives its own,
 * answering as a BMC would (there is no /dev/ipmi0 on the development
 * machines). */
struct pollfd;
typedef struct pa_ipmi_fns {
    int (*open)(const char *path, int flags);
    int (*ioctl)(int fd, unsigned long req, void *arg);
    int (*poll)(struct pollfd *fds, unsigned long n, int timeout_ms);
    int (*close)(int fd);
} pa_ipmi_fns;
/* One DCMI power reading from device (/dev/ipmi0) through the kernel's
 * ioctl interface (IPMICTL_SEND_COMMAND, IPMICTL_RECEIVE_MSG_TRUNC),
 * waiting at most timeout_s: 0, or -errno with why naming the device,
 * the cause and the fix (absent: load ipmi_devintf and ipmi_si; EACCES:
 * its permission; a completion code: named).  Thread-safe. */
int pa_ipmi_dcmi_read(const pa_ipmi_fns *fns, const char *device, double timeout_s,
                      pa_dcmi_power *out, char *why, size_t len);

/* ---- HTTP, polled on a thread of its own (libcurl, dlopen'd) ---- */

typedef struct pa_wall_http {
    char cacert[512];  /* CA file for https ("" the system's) */
    int insecure;      /* 1: no certificate check (said in assumed) */
    char userpwd[256]; /* "user:password" from the credentials file, "" none */
    double timeout_s;  /* per request, connect included */
} pa_wall_http;

/* GETs url: the body (malloc'd, NUL-terminated) in *body, its length in
 * *len; 0, or -errno with err naming the URL, the cause and the fix
 * (HTTP 401: the credentials; a certificate: cacert= or insecure=1).
 * Thread-safe. */
int pa_wall_http_get(const pa_wall_http *h, const char *url, char **body, size_t *len, char *err,
                     size_t errlen);
/* Reads "user:password" from path, refused (-EPERM) when group or others
 * may read it. */
int pa_wall_credentials_read(const char *path, char *out, size_t outlen, char *why, size_t len);

/* A poll: one reading into out (power_w, avg_s, meter, how), 0 or -errno
 * with err. */
typedef int (*pa_wall_poll_fn)(void *user, pa_wall_reading *out, char *err, size_t errlen);
typedef struct pa_wall_poller pa_wall_poller;
/* Starts a thread calling fn every period_s (doubled while it fails, up
 * to 8 times; fn's user must outlive the poller): 0, or -errno. */
int pa_wall_poller_start(double period_s, pa_wall_poll_fn fn, void *user, pa_wall_poller **out);
/* The latest reading with its age at now_ns (CLOCK_MONOTONIC): 1, 0 none
 * yet; err gets the last poll's error ("" when it succeeded) and the
 * result is -errno when the last poll failed and the reading is older
 * than stale_s (or there is none). */
int pa_wall_poller_latest(pa_wall_poller *p, double stale_s, pa_wall_reading *out, char *err,
                          size_t errlen);
/* Stops the thread (waits for a request in flight, at most its timeout)
 * and frees p; NULL is a no-op. */
void pa_wall_poller_stop(pa_wall_poller *p);

#endif
