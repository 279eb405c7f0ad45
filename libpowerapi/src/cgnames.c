/*
 * cgnames.c - which container, pod or systemd unit a cgroup is, by the
 * names its users know (DESIGN.md section 14).
 *
 * Three steps:
 *   pa_cgroup_parse      the cgroup path alone: runtime, container ID, pod
 *                        UID and QoS class, systemd unit; both hierarchies,
 *                        systemd and cgroupfs drivers (pure)
 *   pa_cgroup_names_resolve
 *                        the IDs turned into names from the runtimes' own
 *                        state files under a root folder (read only)
 *   pa__cgcache_get      per context and cgroup, cached: a state file is
 *                        read again only when it changes, a cgroup whose
 *                        names are not found yet is tried again after 1, 2,
 *                        4 ... 64 s
 * Where a name comes from is in the record's source; nothing is guessed:
 * an ID that resolves nowhere keeps its ID and the cgroup path.
 */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CP(dst, src) snprintf((dst), sizeof(dst), "%s", (src))

/* ------------------------------------------------------------------ */
/* The path                                                            */
/* ------------------------------------------------------------------ */

/* Whether s[0..n) is 12 to 64 hexadecimal digits (a container ID). */
static int is_id(const char *s, size_t n)
{
    if (n < 12 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Whether c (n bytes) is PREFIX<id>SUFFIX; the ID copied to id. */
static int id_between(const char *c, size_t n, const char *prefix, const char *suffix, char *id,
                      size_t idlen)
{
    size_t p = strlen(prefix), s = strlen(suffix);
    if (n <= p + s || strncmp(c, prefix, p) || strncmp(c + n - s, suffix, s) ||
        !is_id(c + p, n - p - s) || n - p - s >= idlen)
        return 0;
    memcpy(id, c + p, n - p - s);
    id[n - p - s] = '\0';
    return 1;
}

/* A Kubernetes pod UID: 8-4-4-4-12 hexadecimal digits, with '-' or (in
 * systemd slice names) '_' between; copied with '-'. */
static int pod_uid(const char *s, size_t n, char *out, size_t len)
{
    if (n != 36 || len < 37)
        return 0;
    for (size_t i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i]))
            return 0;
        out[i] = dash ? '-' : (char)tolower((unsigned char)s[i]);
    }
    out[36] = '\0';
    return 1;
}

typedef struct rt_form {
    const char *prefix, *suffix, *runtime;
    int conmon; /* the runtime's monitor of that container */
} rt_form;

/* Container cgroups as runtimes name them (systemd driver, then cgroupfs
 * forms that carry the runtime in the name). */
static const rt_form forms[] = {
    {"docker-", ".scope", "docker", 0},
    {"cri-containerd-", ".scope", "containerd", 0},
    {"crio-conmon-", ".scope", "cri-o", 1},
    {"crio-", ".scope", "cri-o", 0},
    {"crio-", "", "cri-o", 0},
    {"libpod-conmon-", ".scope", "podman", 1},
    {"libpod-", ".scope", "podman", 0},
    {"libpod-", "", "podman", 0},
};

/* One component of the path, with what came before it (prev: the
 * previous component, kube: inside a kubepods tree). */
static void parse_component(const char *c, size_t n, const char *prev, size_t pn, int kube,
                            pa_cgroup_names *o)
{
    char id[72];
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        if (id_between(c, n, forms[i].prefix, forms[i].suffix, id, sizeof(id))) {
            CP(o->runtime, forms[i].runtime);
            CP(o->container_id, id);
            if (forms[i].conmon)
                CP(o->unit, "conmon");
            return;
        }
    }
    /* cgroupfs driver: /docker/ID, /kubepods/QOS/podUID/ID, /lxc/NAME */
    if (is_id(c, n) && n < sizeof(o->container_id)) {
        if (pn == 6 && !strncmp(prev, "docker", 6))
            CP(o->runtime, "docker");
        else if (!kube)
            return;
        else
            o->runtime[0] = '\0'; /* a CRI runtime: found from its state */
        memcpy(o->container_id, c, n);
        o->container_id[n] = '\0';
        return;
    }
    if (n > 12 && !strncmp(c, "lxc.payload.", 12)) {
        CP(o->runtime, "lxc");
        snprintf(o->container_name, sizeof(o->container_name), "%.*s", (int)(n - 12), c + 12);
        return;
    }
    if (pn == 3 && !strncmp(prev, "lxc", 3) && n < sizeof(o->container_name)) {
        CP(o->runtime, "lxc");
        snprintf(o->container_name, sizeof(o->container_name), "%.*s", (int)n, c);
        return;
    }
    /* pods: kubepods-QOS-podUID.slice, kubepods-podUID.slice, podUID */
    const char *pod = NULL;
    size_t podn = 0;
    if (n > 15 && !strncmp(c, "kubepods-", 9) && !strncmp(c + n - 6, ".slice", 6)) {
        const char *p = memmem(c, n, "-pod", 4);
        if (p && p < c + n - 6) {
            pod = p + 4;
            podn = (size_t)(c + n - 6 - pod);
        }
    } else if (kube && n == 39 && !strncmp(c, "pod", 3)) {
        pod = c + 3;
        podn = 36;
    }
    if (pod && pod_uid(pod, podn, o->pod_uid, sizeof(o->pod_uid)))
        return;
    /* systemd units: the deepest service or scope */
    if ((n > 8 && !strncmp(c + n - 8, ".service", 8)) ||
        (n > 6 && !strncmp(c + n - 6, ".scope", 6)))
        snprintf(o->unit, sizeof(o->unit), "%.*s", (int)n, c);
}

int pa_cgroup_parse(const char *path, pa_cgroup_names *out)
{
    if (!out)
        return pa__err(-EINVAL, "pa_cgroup_parse: out is NULL");
    memset(out, 0, sizeof(*out));
    if (!path)
        return pa__err(-EINVAL, "pa_cgroup_parse: path is NULL");
    const char *prev = "", *slice = NULL;
    size_t pn = 0, sn = 0;
    int kube = 0;
    for (const char *c = path; *c;) {
        while (*c == '/')
            c++;
        size_t n = strcspn(c, "/");
        if (!n)
            break;
        if ((n >= 8 && !strncmp(c, "kubepods", 8)))
            kube = 1;
        parse_component(c, n, prev, pn, kube, out);
        if (n > 6 && !strncmp(c + n - 6, ".slice", 6) && strncmp(c, "-.slice", 7)) {
            slice = c;
            sn = n;
        }
        prev = c;
        pn = n;
        c += n;
    }
    /* no service or scope: the deepest slice is the unit */
    if (!out->unit[0] && slice && !out->container_id[0] && !out->pod_uid[0] &&
        sn < sizeof(out->unit))
        snprintf(out->unit, sizeof(out->unit), "%.*s", (int)sn, slice);
    if (out->container_id[0] || out->container_name[0] || out->pod_uid[0] || out->unit[0]) {
        CP(out->source, "cgroup path");
        return 0;
    }
    return -ENOENT;
}

/* The path of one line of /proc/PID/cgroup ("ID:CONTROLLERS:PATH"),
 * when its controllers field is ctl (exact, or one of a comma list when
 * list is set); NULL otherwise. */
static const char *line_path(const char *l, size_t n, const char *ctl, int list, size_t *pn)
{
    const char *c1 = memchr(l, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(l + n - c1 - 1)) : NULL;
    if (!c2)
        return NULL;
    size_t cl = (size_t)(c2 - c1 - 1), k = strlen(ctl);
    int ok = cl == k && !strncmp(c1 + 1, ctl, k);
    for (const char *f = c1 + 1; list && !ok && f < c2;) {
        size_t fl = strcspn(f, ",:");
        ok = fl == k && !strncmp(f, ctl, k);
        f += fl + 1;
    }
    if (!ok)
        return NULL;
    *pn = (size_t)(l + n - c2 - 1);
    return c2 + 1;
}

int pa__cgroup_pick(const char *text, size_t len, char *out, size_t outlen)
{
    /* in order: v2 (not the root), systemd's v1 tree, the cpu controller,
     * then v2's root */
    static const struct {
        const char *ctl;
        int list, root_ok;
    } pref[] = {{"", 0, 0}, {"name=systemd", 0, 0}, {"cpu", 1, 0}, {"", 0, 1}};
    for (size_t k = 0; k < sizeof(pref) / sizeof(pref[0]); k++) {
        for (const char *l = text; l < text + len;) {
            const char *eol = memchr(l, '\n', (size_t)(text + len - l));
            size_t n = eol ? (size_t)(eol - l) : (size_t)(text + len - l), pn = 0;
            const char *p = line_path(l, n, pref[k].ctl, pref[k].list, &pn);
            if (p && pn > 0 && p[0] == '/' && (pref[k].root_ok || pn > 1) && pn < outlen &&
                !memchr(p, '\0', pn)) {
                memcpy(out, p, pn);
                out[pn] = '\0';
                return 0;
            }
            l = eol ? eol + 1 : text + len;
        }
    }
    return -ENOENT;
}

/* ------------------------------------------------------------------ */
/* The runtimes' state                                                 */
/* ------------------------------------------------------------------ */

#define STATE_MAX (16u << 20) /* the largest state file read */

/* The JSON document of root/rel (NULL when absent or not JSON); *st gets
 * its stat. */
static json_object *read_json(const char *root, const char *rel, struct stat *st)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", root, rel);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    json_object *j = NULL;
    if (fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_size > 0 &&
        (uint64_t)st->st_size <= STATE_MAX) {
        char *buf = malloc((size_t)st->st_size + 1);
        size_t n = 0;
        ssize_t r;
        while (buf && n < (size_t)st->st_size &&
               (r = read(fd, buf + n, (size_t)st->st_size - n)) > 0)
            n += (size_t)r;
        if (buf) {
            buf[n] = '\0';
            j = json_tokener_parse(buf);
        }
        free(buf);
    }
    close(fd);
    return j;
}

/* obj.key as a string, or NULL. */
static const char *jstr(json_object *obj, const char *key)
{
    json_object *v;
    if (!obj || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static json_object *jobj(json_object *obj, const char *key)
{
    json_object *v;
    if (!obj || !json_object_is_type(obj, json_type_object) ||
        !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_object))
        return NULL;
    return v;
}

static void set_if(char *dst, size_t len, const char *v)
{
    if (v && *v && !dst[0])
        snprintf(dst, len, "%s", v);
}
#define SET(f, v) set_if(o->f, sizeof(o->f), (v))

/* Kubernetes names from labels or annotations, by the keys of one
 * runtime: container, pod, namespace, pod UID. */
static void kube_names(json_object *a, const char *const keys[4], pa_cgroup_names *o)
{
    SET(container_name, jstr(a, keys[0]));
    SET(pod_name, jstr(a, keys[1]));
    SET(pod_namespace, jstr(a, keys[2]));
    SET(pod_uid, jstr(a, keys[3]));
}

static const char *const cri_keys[4] = {
    "io.kubernetes.cri.container-name", "io.kubernetes.cri.sandbox-name",
    "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-uid"};
static const char *const kube_keys[4] = {"io.kubernetes.container.name", "io.kubernetes.pod.name",
                                         "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid"};

/* An OCI bundle's config.json (containerd, CRI-O): the annotations. */
static int from_oci(const char *root, const char *rel, const char *rt, pa_cgroup_names *o,
                    char *state, size_t slen)
{
    struct stat st;
    json_object *j = read_json(root, rel, &st);
    if (!j)
        return 0;
    json_object *a = jobj(j, "annotations");
    kube_names(a, cri_keys, o);
    kube_names(a, kube_keys, o);
    const char *type = jstr(a, "io.kubernetes.cri.container-type");
    if (type && !strcmp(type, "sandbox"))
        SET(container_name, "POD"); /* the pod's sandbox (pause) */
    if (!o->runtime[0])
        CP(o->runtime, rt);
    snprintf(o->source, sizeof(o->source), "%s config.json", rt);
    snprintf(state, slen, "%s", rel);
    json_object_put(j);
    return 1;
}

/* containerd: run/containerd/io.containerd.runtime.v2.task/NS/ID/config.json
 * in any namespace (k8s.io for Kubernetes, moby for Docker, default). */
static int from_containerd(const char *root, pa_cgroup_names *o, char *state, size_t slen)
{
    static const char base[] = "run/containerd/io.containerd.runtime.v2.task";
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", root, base);
    DIR *d = opendir(p);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char rel[512];
        snprintf(rel, sizeof(rel), "%s/%.64s/%s/config.json", base, e->d_name, o->container_id);
        found = from_oci(root, rel, "containerd", o, state, slen);
    }
    if (d)
        closedir(d);
    return found;
}

static int from_crio(const char *root, pa_cgroup_names *o, char *state, size_t slen)
{
    static const char *const bases[] = {"run/containers/storage/overlay-containers",
                                        "var/lib/containers/storage/overlay-containers"};
    for (int i = 0; i < 2; i++) {
        char rel[512];
        snprintf(rel, sizeof(rel), "%s/%s/userdata/config.json", bases[i], o->container_id);
        if (from_oci(root, rel, "cri-o", o, state, slen))
            return 1;
    }
    return 0;
}

/* Docker: var/lib/docker/containers/ID/config.v2.json: "Name" ("/web"),
 * and the Kubernetes labels of cri-dockerd. */
static int from_docker(const char *root, pa_cgroup_names *o, char *state, size_t slen)
{
    char rel[512];
    snprintf(rel, sizeof(rel), "var/lib/docker/containers/%s/config.v2.json", o->container_id);
    struct stat st;
    json_object *j = read_json(root, rel, &st);
    if (!j)
        return 0;
    kube_names(jobj(jobj(j, "Config"), "Labels"), kube_keys, o);
    const char *name = jstr(j, "Name");
    SET(container_name, name && *name == '/' ? name + 1 : name);
    CP(o->runtime, "docker");
    CP(o->source, "docker config.v2.json");
    snprintf(state, slen, "%s", rel);
    json_object_put(j);
    return 1;
}

/* Podman (and CRI-O's storage): overlay-containers/containers.json, an
 * array of {"id", "names": [...]}. */
static int from_podman(const char *root, pa_cgroup_names *o, char *state, size_t slen)
{
    static const char rel[] = "var/lib/containers/storage/overlay-containers/containers.json";
    struct stat st;
    json_object *j = read_json(root, rel, &st);
    if (!j)
        return 0;
    int found = 0;
    size_t n = json_object_is_type(j, json_type_array) ? json_object_array_length(j) : 0;
    for (size_t i = 0; i < n && !found; i++) {
        json_object *c = json_object_array_get_idx(j, i), *names;
        const char *id = jstr(c, "id");
        if (!id || strcmp(id, o->container_id))
            continue;
        found = 1;
        if (json_object_object_get_ex(c, "names", &names) &&
            json_object_is_type(names, json_type_array) && json_object_array_length(names) > 0) {
            json_object *n0 = json_object_array_get_idx(names, 0);
            if (json_object_is_type(n0, json_type_string))
                SET(container_name, json_object_get_string(n0));
        }
    }
    json_object_put(j);
    if (found) {
        if (!o->runtime[0])
            CP(o->runtime, "podman");
        CP(o->source, "podman containers.json");
        snprintf(state, slen, "%s", rel);
    }
    return found;
}

/* var/log/pods/NAMESPACE_NAME_UID: a pod's name and namespace by its UID
 * (kubelet writes it for every runtime). */
static int from_pod_logs(const char *root, pa_cgroup_names *o)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/var/log/pods", root);
    DIR *d = opendir(p);
    struct dirent *e;
    int found = 0;
    size_t ul = strlen(o->pod_uid);
    while (d && !found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        const char *us = strchr(e->d_name, '_');
        const char *us2 = us ? strchr(us + 1, '_') : NULL;
        if (!us2 || n != (size_t)(us2 + 1 - e->d_name) + ul || strcmp(us2 + 1, o->pod_uid))
            continue;
        snprintf(o->pod_namespace, sizeof(o->pod_namespace), "%.*s", (int)(us - e->d_name),
                 e->d_name);
        snprintf(o->pod_name, sizeof(o->pod_name), "%.*s", (int)(us2 - us - 1), us + 1);
        found = 1;
    }
    if (d)
        closedir(d);
    return found;
}

/* Names of a parsed cgroup from root's state; state gets the file that
 * gave them ("" when none).  1 when a state file was found. */
static int resolve_state(const char *root, pa_cgroup_names *o, char *state, size_t slen)
{
    state[0] = '\0';
    int found = 0;
    if (o->container_id[0]) {
        const char *rt = o->runtime;
        if (!strcmp(rt, "docker"))
            found = from_docker(root, o, state, slen);
        else if (!strcmp(rt, "containerd"))
            found = from_containerd(root, o, state, slen);
        else if (!strcmp(rt, "cri-o"))
            found = from_crio(root, o, state, slen) || from_podman(root, o, state, slen);
        else if (!strcmp(rt, "podman"))
            found = from_podman(root, o, state, slen);
        else /* cgroupfs kubepods: any CRI runtime */
            found = from_containerd(root, o, state, slen) || from_crio(root, o, state, slen) ||
                    from_docker(root, o, state, slen);
    }
    if (o->pod_uid[0] && (!o->pod_name[0] || !o->pod_namespace[0]) && from_pod_logs(root, o)) {
        size_t k = strlen(o->source);
        snprintf(o->source + k, sizeof(o->source) - k, "%s/var/log/pods", k ? ", " : "");
    }
    return found;
}

int pa_cgroup_names_resolve(const char *root, const char *path, pa_cgroup_names *out)
{
    int rc = pa_cgroup_parse(path, out);
    if (rc < 0)
        return rc;
    char state[512];
    resolve_state(root && *root ? root : "/", out, state, sizeof(state));
    return 0;
}

/* ------------------------------------------------------------------ */
/* Per context: cached                                                 */
/* ------------------------------------------------------------------ */

typedef struct cg_entry {
    pa_cgroup_names names;
    int parsed;      /* 1 recognised, -1 nothing to name */
    char state[512]; /* the state file that gave the names, or "" */
    struct timespec mtime;
    off_t size;
    uint64_t retry_ns; /* names not found: when to try again */
    uint64_t backoff_ns;
    uint64_t checked_ns; /* when the state file was last stat()ed */
} cg_entry;

struct pa__cgcache {
    char *root;
    cg_entry **v; /* by cgroup index of the context; each entry allocated
                     once, so that the names a report points to do not
                     move when the table grows */
    size_t cap;
    uint64_t reads; /* state lookups, for the tests and the bench */
    /* by path (pa__cgcache_get_path): entry i's path, and an index */
    char **paths;
    size_t npaths, paths_cap;
    int *slots;
    size_t slots_cap;
};

pa__cgcache *pa__cgcache_new(const char *root)
{
    pa__cgcache *c = calloc(1, sizeof(*c));
    if (c && !(c->root = strdup(root && *root ? root : "/"))) {
        free(c);
        c = NULL;
    }
    return c;
}

void pa__cgcache_free(pa__cgcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++)
        free(c->v[i]);
    free(c->v);
    free(c->root);
    for (size_t i = 0; i < c->npaths; i++)
        free(c->paths[i]);
    free(c->paths);
    free(c->slots);
    free(c);
}

uint64_t pa__cgcache_reads(const pa__cgcache *c)
{
    return c ? c->reads : 0;
}

static void cg_lookup(pa__cgcache *c, cg_entry *e, const char *path, uint64_t now_ns)
{
    c->reads++;
    pa_cgroup_parse(path, &e->names);
    if (resolve_state(c->root, &e->names, e->state, sizeof(e->state))) {
        struct stat st;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", c->root, e->state);
        if (stat(p, &st) == 0) {
            e->mtime = st.st_mtim;
            e->size = st.st_size;
        }
        e->backoff_ns = 0;
        return;
    }
    if (!e->names.container_id[0] && !(e->names.pod_uid[0] && !e->names.pod_name[0]))
        return; /* the path says all there is */
    /* an ID not found yet: its state may come after its cgroup */
    e->backoff_ns = e->backoff_ns ? e->backoff_ns * 2 : 1000000000ull;
    if (e->backoff_ns > 64000000000ull)
        e->backoff_ns = 64000000000ull;
    e->retry_ns = now_ns + e->backoff_ns;
}

const pa_cgroup_names *pa__cgcache_get(pa__cgcache *c, size_t g, const char *path, uint64_t now_ns)
{
    if (!c || !path)
        return NULL;
    if (g >= c->cap) {
        size_t old = c->cap;
        if (PA__GROW(c->v, c->cap, g + 1, 64) < 0)
            return NULL;
        memset(c->v + old, 0, (c->cap - old) * sizeof(*c->v));
    }
    if (!c->v[g] && !(c->v[g] = calloc(1, sizeof(*c->v[g]))))
        return NULL;
    cg_entry *e = c->v[g];
    if (!e->parsed) {
        cg_lookup(c, e, path, now_ns);
        e->parsed = e->names.source[0] ? 1 : -1;
    } else if (e->parsed > 0 && e->state[0] && e->checked_ns != now_ns) {
        /* names from a state file: read again when it changes (checked
         * once a window: a cgroup's processes ask in the same one) */
        e->checked_ns = now_ns;
        struct stat st;
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", c->root, e->state);
        if (stat(p, &st) == 0 && (st.st_mtim.tv_sec != e->mtime.tv_sec ||
                                  st.st_mtim.tv_nsec != e->mtime.tv_nsec || st.st_size != e->size))
            cg_lookup(c, e, path, now_ns);
        /* a state file removed (the container is gone): keep the names */
    } else if (e->backoff_ns && now_ns >= e->retry_ns) {
        cg_lookup(c, e, path, now_ns);
    }
    return e->parsed > 0 ? &e->names : NULL;
}

static uint64_t path_hash_at(const void *user, size_t i)
{
    return pa__hash_str(((const pa__cgcache *)user)->paths[i]);
}

const pa_cgroup_names *pa__cgcache_get_path(pa__cgcache *c, const char *path, uint64_t now_ns)
{
    if (!c || !path || !*path)
        return NULL;
    uint64_t h = pa__hash_str(path);
    for (size_t q = c->slots_cap ? h & (c->slots_cap - 1) : 0; c->slots_cap && c->slots[q];
         q = (q + 1) & (c->slots_cap - 1)) {
        size_t i = (size_t)c->slots[q] - 1;
        if (!strcmp(c->paths[i], path))
            return pa__cgcache_get(c, i, path, now_ns);
    }
    size_t i = c->npaths;
    char *dup = strdup(path);
    if (!dup || PA__GROW(c->paths, c->paths_cap, i + 1, 64) < 0 ||
        pa__index_reserve(&c->slots, &c->slots_cap, 64, 0, i, path_hash_at, c) < 0) {
        free(dup);
        return NULL;
    }
    c->paths[i] = dup;
    c->npaths++;
    size_t q = h & (c->slots_cap - 1);
    while (c->slots[q])
        q = (q + 1) & (c->slots_cap - 1);
    c->slots[q] = (int)i + 1;
    return pa__cgcache_get(c, i, path, now_ns);
}
