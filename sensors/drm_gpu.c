/*
 * drm_gpu.c - the "drm-gpu" sensor: AMD (amdgpu) and Intel (i915, xe) GPUs
 * through sysfs and procfs (issue 28; DESIGN.md section 16).
 *
 * Devices: <sysfs>/class/drm/cardN (not its connectors, cardN-DP-1), its
 * PCI address and driver from device/uevent (PCI_SLOT_NAME, DRIVER), and
 * its power from device/hwmon/hwmon*: energy1_input (µJ, cumulative: the
 * best), else power1_average (µW, averaged by the driver), else
 * power1_input (µW, instantaneous), as Documentation/hwmon/sysfs-interface
 * defines them.
 *
 * Processes: the kernel's DRM usage stats (Documentation/gpu/drm-usage-
 * stats.rst) in <procfs>/PID/fdinfo/FD of each descriptor that points
 * into /dev/dri: drm-driver, drm-pdev, drm-client-id and drm-engine-<name>
 * ("<ns> ns": time the engine was busy for the client).  Several
 * descriptors of one client (same pdev and client id) count once.
 *
 * The frame gets, under "drm-gpu", the devices' readings and every
 * process's busy nanoseconds per device (gpu_share.c reads them).
 */
#include "gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads root/rel into buf (NUL-terminated): bytes or -errno. */
static ssize_t read_at(const char *root, const char *rel, char *buf, size_t len)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return n;
}

/* The value after "KEY=" in a uevent text, into out. */
static void uevent_value(const char *text, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, key, k) && l[k] == '=') {
            size_t n = strcspn(l + k + 1, "\n");
            snprintf(out, len, "%.*s", (int)n, l + k + 1);
            return;
        }
}

/* The hwmon power of card (its device's first hwmon with a reading). */
static void device_power(const char *sysfs, const char *card, pa_gpu_dev *d)
{
    char rel[512], buf[64];
    snprintf(rel, sizeof(rel), "%s/class/drm/%s/device/hwmon", sysfs, card);
    DIR *h = opendir(rel);
    struct dirent *e;
    while (h && (e = readdir(h)) && d->source == PA_GPU_NONE) {
        if (strncmp(e->d_name, "hwmon", 5))
            continue;
        static const struct {
            const char *file;
            int source;
            const char *reading;
        } files[] = {{"energy1_input", PA_GPU_ENERGY, "energy1_input (measured)"},
                     {"power1_average", PA_GPU_POWER_AVG,
                      "power1_average (the driver's average, integrated)"},
                     {"power1_input", PA_GPU_POWER, "power1_input (instantaneous, integrated)"}};
        for (size_t i = 0; i < 3 && d->source == PA_GPU_NONE; i++) {
            snprintf(rel, sizeof(rel), "class/drm/%s/device/hwmon/%.32s/%s", card, e->d_name,
                     files[i].file);
            if (read_at(sysfs, rel, buf, sizeof(buf)) <= 0)
                continue;
            char *end;
            unsigned long long v = strtoull(buf, &end, 10);
            if (end == buf)
                continue;
            d->source = files[i].source;
            snprintf(d->reading, sizeof(d->reading), "%s", files[i].reading);
            if (d->source == PA_GPU_ENERGY)
                d->energy_j = (double)v * 1e-6; /* µJ */
            else
                d->power_w = (double)v * 1e-6; /* µW */
        }
    }
    if (h)
        closedir(h);
}

int pa_gpu_devices(const char *sysfs, pa_gpu_dev *out, int max)
{
    char path[4096], buf[1024];
    snprintf(path, sizeof(path), "%s/class/drm", sysfs);
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        const char *c = e->d_name;
        if (strncmp(c, "card", 4) || !c[4] || strspn(c + 4, "0123456789") != strlen(c + 4))
            continue; /* connectors: card0-DP-1 */
        pa_gpu_dev *g = &out[n];
        memset(g, 0, sizeof(*g));
        snprintf(g->card, sizeof(g->card), "%.15s", c);
        snprintf(path, sizeof(path), "class/drm/%s/device/uevent", c);
        if (read_at(sysfs, path, buf, sizeof(buf)) > 0) {
            uevent_value(buf, "PCI_SLOT_NAME", g->pdev, sizeof(g->pdev));
            uevent_value(buf, "DRIVER", g->driver, sizeof(g->driver));
        }
        device_power(sysfs, c, g);
        g->index = atoi(c + 4);
        snprintf(g->vendor, sizeof(g->vendor), "%s",
                 !strcmp(g->driver, "amdgpu")                             ? "amd"
                 : !strcmp(g->driver, "i915") || !strcmp(g->driver, "xe") ? "intel"
                                                                          : g->driver);
        if (g->source != PA_GPU_NONE)
            n++;
    }
    closedir(d);
    return n;
}

int pa_gpu_fdinfo_parse(const char *text, pa_gpu_client *out)
{
    memset(out, 0, sizeof(*out));
    int have = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *colon = strchr(l, ':');
        const char *eol = strchr(l, '\n');
        if (!colon || (eol && colon > eol))
            continue;
        size_t k = (size_t)(colon - l);
        const char *v = colon + 1;
        v += strspn(v, " \t");
        size_t vn = eol ? (size_t)(eol - v) : strlen(v);
        if (k == 10 && !strncmp(l, "drm-driver", 10)) {
            snprintf(out->driver, sizeof(out->driver), "%.*s", (int)vn, v);
            have |= 1;
        } else if (k == 8 && !strncmp(l, "drm-pdev", 8)) {
            snprintf(out->pdev, sizeof(out->pdev), "%.*s", (int)vn, v);
        } else if (k == 13 && !strncmp(l, "drm-client-id", 13)) {
            out->client_id = strtoull(v, NULL, 10);
            have |= 2;
        } else if (k > 11 && !strncmp(l, "drm-engine-", 11) &&
                   strncmp(l, "drm-engine-capacity-", 20)) {
            /* "<uint> ns" */
            char *end;
            unsigned long long ns = strtoull(v, &end, 10);
            if (end != v && !strncmp(end + strspn(end, " "), "ns", 2))
                out->busy_ns += ns;
        }
    }
    return have == 3 ? 0 : -ENOENT;
}

/* Whether fd of pid points into /dev/dri. */
static int is_dri(const char *procfs, const char *pid, const char *fd)
{
    char p[4096], t[256];
    snprintf(p, sizeof(p), "%s/%s/fd/%s", procfs, pid, fd);
    ssize_t n = readlink(p, t, sizeof(t) - 1);
    if (n <= 0)
        return 0;
    t[n] = '\0';
    return !strncmp(t, "/dev/dri/", 9);
}

/* The clients of one process: busy ns per device, each client once. */
static int process_clients(const char *procfs, const char *pid, const pa_gpu_dev *devs, int ndev,
                           pa_gpu_proc *out, int max)
{
    char p[4096], buf[4096];
    snprintf(p, sizeof(p), "%s/%s/fd", procfs, pid);
    DIR *d = opendir(p);
    if (!d)
        return 0;
    unsigned long long seen[64];
    int nseen = 0, n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !is_dri(procfs, pid, e->d_name))
            continue;
        snprintf(p, sizeof(p), "%s/fdinfo/%s", pid, e->d_name);
        pa_gpu_client c;
        if (read_at(procfs, p, buf, sizeof(buf)) <= 0 || pa_gpu_fdinfo_parse(buf, &c) < 0)
            continue;
        int dev = -1;
        for (int i = 0; i < ndev && dev < 0; i++)
            if (!strcmp(devs[i].pdev, c.pdev) || (!c.pdev[0] && ndev == 1))
                dev = i;
        unsigned long long key = c.client_id * 16 + (unsigned)(dev + 1);
        int dup = 0;
        for (int i = 0; i < nseen; i++)
            dup |= seen[i] == key;
        if (dev < 0 || dup || nseen == 64)
            continue;
        seen[nseen++] = key;
        int slot = -1;
        for (int i = 0; i < n; i++)
            if (out[i].dev == dev)
                slot = i;
        if (slot < 0 && n < max) {
            slot = n++;
            out[slot] = (pa_gpu_proc){.pid = (pid_t)atoi(pid), .dev = dev, .busy_s = 0};
        }
        if (slot >= 0)
            out[slot].busy_s += (double)c.busy_ns * 1e-9;
    }
    closedir(d);
    return n;
}

int pa_gpu_processes(const char *procfs, const pa_gpu_dev *devs, int ndev, pa_gpu_proc *out,
                     int max)
{
    DIR *d = opendir(procfs);
    if (!d)
        return -errno;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        n += process_clients(procfs, e->d_name, devs, ndev, out + n, max - n);
    }
    closedir(d);
    return n;
}

static int drm_probe(const pa_env *env, char *why, size_t len)
{
    pa_gpu_dev devs[PA_GPU_MAX_DEVS];
    int n = pa_gpu_devices(pa_env_sysfs(env), devs, PA_GPU_MAX_DEVS);
    if (n > 0)
        return 0;
    snprintf(why, len,
             "drm-gpu: no DRM device with a hwmon power or energy reading under "
             "%s/class/drm (%s)",
             pa_env_sysfs(env), n < 0 ? strerror(-n) : "no GPU here, or its driver has none");
    return n < 0 ? n : -ENODEV;
}

static int drm_sample(pa_module *m, pa_frame *f)
{
    const pa_env *env = pa_module_env(m);
    pa_gpu_reading *r = pa_module_priv(m);
    if (!r) {
        r = calloc(1, sizeof(*r));
        if (!r)
            return -ENOMEM;
        pa_module_set_priv(m, r);
    }
    int n = pa_gpu_devices(pa_env_sysfs(env), r->dev, PA_GPU_MAX_DEVS);
    if (n < 0) {
        pa_module_errorf(m, "drm-gpu: %s/class/drm: %s", pa_env_sysfs(env), strerror(-n));
        return n;
    }
    r->ndev = n;
    int np = pa_gpu_processes(pa_env_procfs(env), r->dev, n, r->proc, PA_GPU_MAX_PROCS);
    r->nproc = np > 0 ? np : 0;
    return pa_frame_put(f, "drm-gpu", r, sizeof(*r));
}

static void drm_stop(pa_module *m)
{
    free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_drm_gpu = {
    .abi = PA_MODULE_ABI,
    .name = "drm-gpu",
    .kind = PA_SENSOR,
    .description = "AMD and Intel GPUs: device power (hwmon), per-process engine time (DRM "
                   "fdinfo)",
    .probe = drm_probe,
    .sample = drm_sample,
    .stop = drm_stop,
};
