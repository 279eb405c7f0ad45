/*
 * monitor_ring.c - `powerapi monitor --ring NAME`: the reports of a
 * daemon's ring instead of our own sampling.
 *
 * Each interval, every window published since the previous output is
 * averaged into one report (pa_ring_aggregate), filtered to the pids
 * asked for (or all processes) and, with --cgroups, the cgroups, then
 * written with the usual writers (output.c).  The first output is the
 * newest window alone, so something is printed at once.
 */
#include "cli.h"
#include "output.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "monitor"

static bool want(const cli_ring_monitor *rm, const pa_target_info *t)
{
    if (rm->vms || t->type == PA_TARGET_VM)
        return rm->vms && t->type == PA_TARGET_VM;
    if (t->type == PA_TARGET_CGROUP)
        return rm->cgroups;
    if (t->type != PA_TARGET_PROCESS)
        return false;
    if (rm->npids == 0)
        return true;
    for (size_t i = 0; i < rm->npids; i++)
        if (rm->pids[i] == t->pid)
            return true;
    return false;
}

/* Writes r keeping only the wanted targets. */
static int emit(const cli_ring_monitor *rm, const pa_report *r, pa_target_info **buf, size_t *cap)
{
    if (r->ntargets > *cap) {
        pa_target_info *nb = realloc(*buf, r->ntargets * sizeof(*nb));
        if (!nb) {
            cli_error(CMD, "out of memory");
            return -ENOMEM;
        }
        *buf = nb;
        *cap = r->ntargets;
    }
    pa_report f = *r;
    size_t n = 0;
    for (size_t i = 0; i < r->ntargets; i++)
        if (want(rm, &r->targets[i]))
            (*buf)[n++] = r->targets[i];
    f.targets = *buf;
    f.ntargets = n;
    int rc = rp_out_report(rm->out, &f);
    if (rc < 0 && rc != -EPIPE) /* `| head`: quiet */
        cli_error(CMD, "writing the report failed: %s", pa_strerror(rc));
    return rc;
}

int cli_monitor_ring(const cli_ring_monitor *rm)
{
    pa_ring_reader *r = NULL;
    int rc = pa_ring_open(rm->ring, &r);
    if (rc < 0) {
        cli_error(CMD, "%s", cli_errmsg(rc));
        return CLI_EXIT_FAIL;
    }
    pa_target_info *buf = NULL;
    size_t cap = 0;
    int status = CLI_EXIT_FAIL;
    uint64_t seq = 0;
    unsigned long outputs = 0;
    const pa_report *rep;
    uint64_t t0 = cli_mono_ns();
    uint64_t next = t0;
    bool first = true;
    for (;;) {
        rc = first ? pa_ring_read(r, &seq, &rep) : pa_ring_aggregate(r, &seq, 0, &rep);
        if (rc == 0) {
            first = false;
            if ((rc = emit(rm, rep, &buf, &cap)) < 0) {
                if (rc == -EPIPE)
                    status = CLI_EXIT_PIPE;
                goto out;
            }
            outputs++;
            if (rm->count && outputs >= rm->count) {
                status = CLI_EXIT_OK;
                goto out;
            }
        } else if (rc != -EAGAIN) {
            cli_error(CMD, "%s", cli_errmsg(rc));
            goto out;
        }
        uint64_t now = cli_mono_ns();
        if (rm->duration_ns && now - t0 >= rm->duration_ns) {
            status = CLI_EXIT_OK;
            goto out;
        }
        /* No window yet: look again soon rather than a whole interval. */
        uint64_t step = rc == 0 ? rm->interval_ns : rm->interval_ns / 10 + 1;
        next += step;
        if (next < now)
            next = now + step;
        if (rm->duration_ns && next > t0 + rm->duration_ns)
            next = t0 + rm->duration_ns;
        uint64_t left = next > now ? next - now : 0;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        siginfo_t si;
        int s = sigtimedwait(rm->sigs, &si, &ts);
        if (s == SIGINT || s == SIGTERM || s == SIGHUP || s == SIGQUIT) {
            status = CLI_EXIT_OK;
            goto out;
        }
    }
out:
    free(buf);
    pa_ring_close(r);
    return status;
}
