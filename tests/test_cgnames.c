/*
 * test_cgnames.c - containers, pods and units by name (issue 27;
 * libpowerapi/src/cgnames.c).
 *
 * 1. pa_cgroup_parse on the paths each runtime and driver makes: Docker
 *    (systemd and cgroupfs drivers), containerd's CRI plugin, CRI-O and its
 *    conmon, Podman and its conmon, LXC (old and new layouts), Kubernetes
 *    pods of the three QoS classes (systemd and cgroupfs drivers), systemd
 *    services, scopes, user sessions and slices; what must not match
 *    (upper-case or short IDs, a bad pod UID, the root).
 * 2. pa__cgroup_pick on /proc/PID/cgroup of v2, hybrid and v1 hosts.
 * 3. pa_cgroup_names_resolve on tests/fixtures/containers/root (the state
 *    files each runtime writes, trimmed): names, pods, where they came
 *    from; a truncated state file and an unknown ID keep the ID, no name.
 * 4. The per-context cache: a state file is read once, again only when it
 *    changes; an ID not found is tried again after 1 s, then 2 s; names
 *    that appear after the cgroup are found; a removed state file keeps
 *    the names.
 */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define D "d0c4e70123456789abcdef0123456789abcdef0123456789abcdef0123456789"
#define K "c0ffeefedcba9876543210fedcba9876543210fedcba9876543210fedcba9876"
#define S "5a4d801111222233334444111122223333444411112222333344441111222233"
#define O "c210e5aaaabbbbccccddddaaaabbbbccccddddaaaabbbbccccddddaaaabbbbcc"
#define P "b0d3a19999888877776666999988887777666699998888777766669999888877"
#define KD "7e57ab0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f"
#define T "7a11ed1234123412341234123412341234123412341234123412341234123412"
#define NOWHERE "0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff"
#define LATE "1a7e000011112222333344445555666677778888999900001111222233334444"
#define U1 "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
#define U1_ "0a1b2c3d_4e5f_4a6b_8c7d_9e0f1a2b3c4d"
#define U2 "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9"
#define U3 "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"

typedef struct want {
    const char *path, *runtime, *id, *name, *pod_uid, *unit;
} want;

static const want parsed[] = {
    /* Docker: systemd driver, cgroupfs driver (v1 and v2) */
    {"/system.slice/docker-" D ".scope", "docker", D, "", "", ""},
    {"/docker/" D, "docker", D, "", "", ""},
    /* containerd CRI in a burstable pod (systemd driver) */
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" U1_
     ".slice/cri-containerd-" K ".scope",
     "containerd", K, "", U1, ""},
    /* guaranteed (no QoS slice) and best-effort */
    {"/kubepods.slice/kubepods-pod" U1_ ".slice/cri-containerd-" K ".scope", "containerd", K, "",
     U1, ""},
    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" U2 ".slice/crio-" O
     ".scope",
     "cri-o", O, "", U2, ""},
    /* cgroupfs driver: /kubepods/QOS/podUID/ID, /kubepods/podUID/ID */
    {"/kubepods/burstable/pod" U1 "/" K, "", K, "", U1, ""},
    {"/kubepods/pod" U1 "/" K, "", K, "", U1, ""},
    /* a pod's own cgroup, no container */
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" U3 ".slice", "", "", "", U3,
     ""},
    /* CRI-O's and Podman's monitors belong to their container */
    {"/system.slice/crio-conmon-" O ".scope", "cri-o", O, "", "", "conmon"},
    {"/machine.slice/libpod-conmon-" P ".scope", "podman", P, "", "", "conmon"},
    {"/machine.slice/libpod-" P ".scope/container", "podman", P, "", "", ""},
    {"/libpod_parent/libpod-" P, "podman", P, "", "", ""},
    /* LXC 4 and older */
    {"/lxc.payload.web1", "lxc", "", "web1", "", ""},
    {"/lxc/web2", "lxc", "", "web2", "", ""},
    /* systemd: the deepest service or scope, else the deepest slice */
    {"/system.slice/nginx.service", "", "", "", "", "nginx.service"},
    {"/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-4242.scope", "", "", "",
     "", "app-firefox-4242.scope"},
    {"/user.slice/user-1000.slice/session-2.scope", "", "", "", "", "session-2.scope"},
    {"/user.slice/user-1000.slice", "", "", "", "", "user-1000.slice"},
    /* not IDs: upper case, too short; a bad pod UID */
    {"/docker/D0C4E70123456789ABCDEF0123456789", "", "", "", "", ""},
    {"/system.slice/docker-abc.scope", "", "", "", "", "docker-abc.scope"},
    {"/kubepods/burstable/pod1234/" K, "", K, "", "", ""},
};

START_TEST(parse_paths)
{
    for (size_t i = 0; i < sizeof(parsed) / sizeof(parsed[0]); i++) {
        const want *w = &parsed[i];
        pa_cgroup_names n;
        int rc = pa_cgroup_parse(w->path, &n);
        int none = !*w->runtime && !*w->id && !*w->name && !*w->pod_uid && !*w->unit;
        ck_assert_msg(rc == (none ? -ENOENT : 0), "%s: rc %d", w->path, rc);
        ck_assert_msg(!strcmp(n.runtime, w->runtime) && !strcmp(n.container_id, w->id) &&
                          !strcmp(n.container_name, w->name) && !strcmp(n.pod_uid, w->pod_uid) &&
                          !strcmp(n.unit, w->unit),
                      "%s:\n got runtime '%s' id '%s' name '%s' pod '%s' unit '%s'", w->path,
                      n.runtime, n.container_id, n.container_name, n.pod_uid, n.unit);
        ck_assert_str_eq(n.source, none ? "" : "cgroup path");
    }
    pa_cgroup_names n;
    ck_assert_int_eq(pa_cgroup_parse("/", &n), -ENOENT);
    ck_assert_int_eq(pa_cgroup_parse("", &n), -ENOENT);
    ck_assert_int_eq(pa_cgroup_parse(NULL, &n), -EINVAL);
    ck_assert_int_eq(pa_cgroup_parse("/x", NULL), -EINVAL);
}
END_TEST

START_TEST(pick_hierarchy)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        /* pure v2 */
        {"0::/system.slice/docker-" D ".scope\n", "/system.slice/docker-" D ".scope"},
        /* hybrid, as on this machine: v2 at the root, the container in v1 */
        {"12:cpuset:/docker/" D "\n11:cpu,cpuacct:/docker/" D "\n1:name=systemd:/docker/" D
         "\n0::/\n",
         "/docker/" D},
        /* hybrid with systemd's v1 tree at the root: the cpu controller */
        {"4:memory:/x\n2:cpu,cpuacct:/kubepods/pod" U1 "/" K "\n1:name=systemd:/\n0::/\n",
         "/kubepods/pod" U1 "/" K},
        /* hybrid whose v2 path says it all */
        {"1:name=systemd:/system.slice/a.service\n0::/system.slice/a.service\n",
         "/system.slice/a.service"},
        /* nothing but roots */
        {"9:name=systemd:/\n1:cpu:/\n0::/\n", "/"},
        /* v1 only */
        {"12:cpu,cpuacct:/legacy\n1:name=systemd:/legacy\n", "/legacy"},
        {"", NULL},
        {"garbage\n::\n0:\n", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[512];
        int rc = pa__cgroup_pick(cases[i].text, strlen(cases[i].text), out, sizeof(out));
        if (!cases[i].want) {
            ck_assert_msg(rc == -ENOENT, "case %zu: rc %d '%s'", i, rc, rc ? "" : out);
            continue;
        }
        ck_assert_msg(rc == 0 && !strcmp(out, cases[i].want), "case %zu: rc %d '%s', want '%s'", i,
                      rc, rc ? "" : out, cases[i].want);
    }
}
END_TEST

typedef struct rwant {
    const char *path, *runtime, *name, *pod, *ns, *uid, *source;
} rwant;

static const rwant resolved[] = {
    {"/system.slice/docker-" D ".scope", "docker", "web", "", "", "", "docker config.v2.json"},
    {"/kubepods/besteffort/pod6b3e1f2a-0c4d-4e5f-8a9b-0c1d2e3f4a5b/" KD, "docker", "api",
     "shop-api-7d9c", "shop", "6b3e1f2a-0c4d-4e5f-8a9b-0c1d2e3f4a5b", "docker config.v2.json"},
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" U1_
     ".slice/cri-containerd-" K ".scope",
     "containerd", "checkout", "checkout-5c8d7b6f9-x2x7k", "shop", U1, "containerd config.json"},
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" U1_
     ".slice/cri-containerd-" S ".scope",
     "containerd", "POD", "checkout-5c8d7b6f9-x2x7k", "shop", U1, "containerd config.json"},
    /* cgroupfs driver: the runtime found from its state */
    {"/kubepods/burstable/pod" U1 "/" K, "containerd", "checkout", "checkout-5c8d7b6f9-x2x7k",
     "shop", U1, "containerd config.json"},
    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" U2 ".slice/crio-" O
     ".scope",
     "cri-o", "worker", "batch-worker-0", "jobs", U2, "cri-o config.json"},
    {"/machine.slice/libpod-" P ".scope/container", "podman", "db", "", "", "",
     "podman containers.json"},
    /* a pod cgroup: its names from kubelet's log folder */
    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" U3 ".slice", "", "",
     "node-exporter-q8k2p", "monitoring", U3, "cgroup path, /var/log/pods"},
    /* a truncated state file, an ID found nowhere: the ID, no name */
    {"/system.slice/docker-" T ".scope", "docker", "", "", "", "", "cgroup path"},
    {"/system.slice/docker-" NOWHERE ".scope", "docker", "", "", "", "", "cgroup path"},
    {"/lxc.payload.web1", "lxc", "web1", "", "", "", "cgroup path"},
};

START_TEST(resolve_fixture)
{
    const char *root = PA_FIXTURES "/containers/root";
    for (size_t i = 0; i < sizeof(resolved) / sizeof(resolved[0]); i++) {
        const rwant *w = &resolved[i];
        pa_cgroup_names n;
        ck_assert_int_eq(pa_cgroup_names_resolve(root, w->path, &n), 0);
        ck_assert_msg(!strcmp(n.runtime, w->runtime) && !strcmp(n.container_name, w->name) &&
                          !strcmp(n.pod_name, w->pod) && !strcmp(n.pod_namespace, w->ns) &&
                          !strcmp(n.pod_uid, w->uid) && !strcmp(n.source, w->source),
                      "%s:\n got runtime '%s' name '%s' pod '%s' ns '%s' uid '%s' source '%s'",
                      w->path, n.runtime, n.container_name, n.pod_name, n.pod_namespace, n.pod_uid,
                      n.source);
    }
    pa_cgroup_names n;
    /* a real Podman container of this machine (runc, cgroupfs driver,
     * hybrid hierarchy): its /proc/PID/cgroup and containers.json */
    char *txt = pa_test_slurp(PA_FIXTURES "/containers/podman-hybrid/proc/5051/cgroup");
    char path[512];
    ck_assert_ptr_nonnull(txt);
    ck_assert_int_eq(pa__cgroup_pick(txt, strlen(txt), path, sizeof(path)), 0);
    free(txt);
    ck_assert_int_eq(
        pa_cgroup_names_resolve(PA_FIXTURES "/containers/podman-hybrid/root", path, &n), 0);
    ck_assert_str_eq(n.runtime, "podman");
    ck_assert_str_eq(n.container_name, "pa-test-burn");
    ck_assert_str_eq(n.container_id,
                     "54afdc7c85c040f598cb178a8bd46f433119fb48ab30517ffca470a9ebc1cf6b");
    ck_assert_str_eq(n.source, "podman containers.json");
    ck_assert_int_eq(pa_cgroup_names_resolve("/nonexistent", "/docker/" D, &n), 0);
    ck_assert_str_eq(n.container_id, D);
    ck_assert_str_eq(n.container_name, "");
    ck_assert_int_eq(pa_cgroup_names_resolve(root, "/", &n), -ENOENT);
}
END_TEST

static void touch_later(const char *path)
{
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec += 5;
    ts[1] = ts[0];
    ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

START_TEST(cache_refresh)
{
    char *root = pa_test_fixture_copy("containers/root");
    pa__cgcache *c = pa__cgcache_new(root);
    ck_assert_ptr_nonnull(c);
    const uint64_t s = 1000000000ull;
    const char *web = "/system.slice/docker-" D ".scope";
    const pa_cgroup_names *n = pa__cgcache_get(c, 0, web, 10 * s);
    ck_assert_ptr_nonnull(n);
    ck_assert_str_eq(n->container_name, "web");
    ck_assert_uint_eq(pa__cgcache_reads(c), 1);
    for (int i = 0; i < 100; i++) /* 100 windows: no read */
        n = pa__cgcache_get(c, 0, web, (uint64_t)(11 + i) * s);
    ck_assert_uint_eq(pa__cgcache_reads(c), 1);
    /* renamed (docker rename): the state file changes */
    char p[4096];
    snprintf(p, sizeof(p), "%s/var/lib/docker/containers/%s/config.v2.json", root, D);
    pa_test_write(root, "var/lib/docker/containers/" D "/config.v2.json",
                  "{\"ID\":\"%s\",\"Name\":\"/web-blue\"}", D);
    touch_later(p);
    n = pa__cgcache_get(c, 0, web, 200 * s);
    ck_assert_str_eq(n->container_name, "web-blue");
    ck_assert_uint_eq(pa__cgcache_reads(c), 2);
    /* the container removed: its names stay for its last windows */
    pa_test_remove(root, "var/lib/docker/containers/" D "/config.v2.json");
    n = pa__cgcache_get(c, 0, web, 201 * s);
    ck_assert_str_eq(n->container_name, "web-blue");
    /* a cgroup that appears before its state: tried again after 1 s, 2 s */
    const char *late = "/system.slice/docker-" LATE ".scope";
    n = pa__cgcache_get(c, 1, late, 300 * s);
    ck_assert_str_eq(n->container_name, "");
    uint64_t r0 = pa__cgcache_reads(c);
    n = pa__cgcache_get(c, 1, late, 300 * s + s / 2);
    ck_assert_uint_eq(pa__cgcache_reads(c), r0);
    n = pa__cgcache_get(c, 1, late, 301 * s);
    ck_assert_uint_eq(pa__cgcache_reads(c), r0 + 1);
    n = pa__cgcache_get(c, 1, late, 302 * s);
    ck_assert_uint_eq(pa__cgcache_reads(c), r0 + 1); /* next try at 303 s */
    pa_test_write(root, "var/lib/docker/containers/" LATE "/config.v2.json",
                  "{\"Name\":\"/late\"}");
    n = pa__cgcache_get(c, 1, late, 303 * s);
    ck_assert_str_eq(n->container_name, "late");
    ck_assert_uint_eq(pa__cgcache_reads(c), r0 + 2);
    /* no container, pod or unit: nothing, and no read */
    uint64_t r1 = pa__cgcache_reads(c);
    ck_assert_ptr_null(pa__cgcache_get(c, 2, "/", 304 * s));
    ck_assert_ptr_null(pa__cgcache_get(c, 2, "/", 400 * s));
    ck_assert_uint_eq(pa__cgcache_reads(c), r1 + 1);
    pa__cgcache_free(c);
    pa_test_rmtree(root);
}
END_TEST

/* The names a report points to stay where they are while the cache
 * grows in the same tick (a host with hundreds of libvirt scopes named at
 * once crashed monitor --cgroups: issue 41's bench). */
START_TEST(cache_entries_stay)
{
    pa__cgcache *c = pa__cgcache_new("/nonexistent");
    const pa_cgroup_names *first = pa__cgcache_get(c, 0, "/system.slice/a.service", 1);
    ck_assert_ptr_nonnull(first);
    for (size_t g = 1; g < 1000; g++) {
        char path[64];
        snprintf(path, sizeof(path), "/system.slice/u%zu.service", g);
        ck_assert_ptr_nonnull(pa__cgcache_get(c, g, path, 1));
    }
    ck_assert_ptr_eq(pa__cgcache_get(c, 0, "/system.slice/a.service", 1), first);
    ck_assert_str_eq(first->unit, "a.service");
    pa__cgcache_free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cgnames");
    TCase *tc = tcase_create("names");
    tcase_add_test(tc, parse_paths);
    tcase_add_test(tc, pick_hierarchy);
    tcase_add_test(tc, resolve_fixture);
    tcase_add_test(tc, cache_refresh);
    tcase_add_test(tc, cache_entries_stay);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
