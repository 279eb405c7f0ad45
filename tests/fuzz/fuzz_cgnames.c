/* fuzz_cgnames.c - container, pod and unit names (issue 27): a cgroup path
 * parsed (pa_cgroup_parse), a /proc/PID/cgroup text picked
 * (pa__cgroup_pick), and the runtimes' state files read by
 * pa_cgroup_names_resolve: a Docker config.v2.json, a containerd OCI
 * config.json, a CRI-O one, Podman's containers.json.  Pieces: the path,
 * the /proc/PID/cgroup text, then the four state files (each written under
 * the IDs the path gives, and under a fixed ID). */
#include "fuzz.h"

#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXED "d0c4e70123456789abcdef0123456789abcdef0123456789abcdef0123456789"

static void check(const pa_cgroup_names *n)
{
    const char *f[] = {n->runtime,       n->container_id, n->container_name, n->pod_name,
                       n->pod_namespace, n->pod_uid,      n->unit,           n->source};
    const size_t sz[] = {sizeof(n->runtime),  sizeof(n->container_id),  sizeof(n->container_name),
                         sizeof(n->pod_name), sizeof(n->pod_namespace), sizeof(n->pod_uid),
                         sizeof(n->unit),     sizeof(n->source)};
    for (size_t i = 0; i < 8; i++)
        if (!memchr(f[i], '\0', sz[i]))
            fz_fail("cgnames: field %zu not terminated", i);
}

static void write_state(const char *root, const char *id, const fz_piece *pc, size_t n)
{
    char rel[512];
    static const char *const forms[4] = {
        "var/lib/docker/containers/%s/config.v2.json",
        "run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
        "run/containers/storage/overlay-containers/%s/userdata/config.json",
        "var/lib/containers/storage/overlay-containers/containers.json"};
    for (size_t k = 0; k < 4 && k < n; k++) {
        snprintf(rel, sizeof(rel), forms[k], id);
        fz_write(root, rel, pc[k].p, pc[k].n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_piece pc[6];
    size_t n = fz_split(data, size, pc, 6);
    char *path = fz_strdup(&pc[0]);
    pa_cgroup_names names;
    int rc = pa_cgroup_parse(path, &names);
    if (rc != 0 && rc != -ENOENT)
        fz_fail("cgnames: parse gave %d", rc);
    check(&names);
    if (n > 1) {
        char out[4096];
        if (pa__cgroup_pick((const char *)pc[1].p, pc[1].n, out, sizeof(out)) == 0 &&
            (!memchr(out, '\0', sizeof(out)) || out[0] != '/'))
            fz_fail("cgnames: pick gave a path not starting with /");
    }
    if (n > 2) {
        const char *root = fz_root(NULL);
        write_state(root, FIXED, pc + 2, n - 2);
        if (rc == 0 && names.container_id[0])
            write_state(root, names.container_id, pc + 2, n - 2);
        rc = pa_cgroup_names_resolve(root, path, &names);
        if (rc != 0 && rc != -ENOENT)
            fz_fail("cgnames: resolve gave %d", rc);
        check(&names);
    }
    free(path);
    return 0;
}
