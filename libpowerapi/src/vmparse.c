/*
 * vmparse.c - which virtual machine a hypervisor's command line, a cgroup
 * path or a thread's name is (DESIGN.md section 18), as pure functions:
 * no file is read here (vms.c reads them), so that the fuzz target and
 * the unit tests call them on bytes alone.
 *
 * The formats, each after its program's own source:
 *   QEMU          -name guest=NAME,debug-threads=on | -name NAME[,...]
 *                 (QemuOpts: ",," is a comma in a value; the first value
 *                 without a key is "guest"), -uuid UUID, -smbios
 *                 type=1,uuid=UUID (Proxmox); vCPU threads "CPU N/KVM"
 *                 or "CPU N/TCG" (qemu_thread_create with debug-threads)
 *   libvirt       machine.slice/machine-qemu\x2dN\x2dNAME.scope (systemd's
 *                 unit name escaping of "qemu-N-NAME"), cgroupfs
 *                 /machine/qemu-N-NAME.libvirt-qemu (and before libvirt
 *                 4.x /machine/NAME.libvirt-qemu)
 *   Proxmox       /qemu.slice/VMID.scope
 *   Firecracker   --id ID | --id=ID, --api-sock PATH; threads "fc_vcpu N"
 *   cloud-hyperv. --api-socket PATH | path=PATH[,fd=N]; threads "vcpuN"
 */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies src into dst (len bytes), cut to fit. */
static void cpy(char *dst, size_t len, const char *src)
{
    size_t n = strnlen(src, len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}
#define CP(dst, src) cpy((dst), sizeof(dst), (src))

/* Appends what to a ", "-joined list. */
static void add_source(char *list, size_t len, const char *what)
{
    size_t n = strnlen(list, len);
    if (n && n + 2 < len) {
        memcpy(list + n, ", ", 3);
        cpy(list + n + 2, len - n - 2, what);
    } else if (!n) {
        cpy(list, len, what);
    }
}

/* ------------------------------------------------------------------ */
/* Command lines                                                       */
/* ------------------------------------------------------------------ */

typedef enum hv { HV_NONE, HV_QEMU, HV_FIRECRACKER, HV_CH } hv;

/* The hypervisor argv[0] is, by its base name. */
static hv hv_of(const char *argv0)
{
    const char *b = strrchr(argv0, '/');
    b = b ? b + 1 : argv0;
    if (!strncmp(b, "qemu-system-", 12) || !strcmp(b, "qemu-kvm") || !strcmp(b, "kvm"))
        return HV_QEMU;
    if (!strcmp(b, "firecracker"))
        return HV_FIRECRACKER;
    if (!strcmp(b, "cloud-hypervisor"))
        return HV_CH;
    return HV_NONE;
}

/* The value of key in a QemuOpts string ("guest=a,,b,debug-threads=on"):
 * ",," unescaped; implied is the key of a first value without "=" (QEMU's
 * implied_opt_name).  1 when found. */
static int qemu_opt(const char *s, const char *key, const char *implied, char *out, size_t len)
{
    size_t klen = strlen(key);
    for (int first = 1; *s; first = 0) {
        const char *eq = NULL, *p = s;
        while (*p && !(*p == ',' && p[1] != ',')) { /* the end of this option */
            if (*p == '=' && !eq)
                eq = p;
            p += (*p == ',') ? 2 : 1;
        }
        const char *v = NULL;
        if (eq && (size_t)(eq - s) == klen && !strncmp(s, key, klen))
            v = eq + 1;
        else if (!eq && first && implied && !strcmp(implied, key))
            v = s;
        if (v) {
            size_t o = 0;
            for (const char *c = v; c < p && o + 1 < len; c++) {
                out[o++] = *c;
                if (*c == ',')
                    c++; /* ",," */
            }
            out[o] = '\0';
            return o > 0;
        }
        s = *p ? p + 1 : p;
    }
    return 0;
}

/* Whether s is 36 characters of a UUID (8-4-4-4-12 hexadecimal digits). */
static int is_uuid(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (size_t i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return 0;
    }
    return 1;
}

/* The option named opt ("-name" or "--name", "--id=X" too) at argv[i]:
 * its value, or NULL; *skip gets the arguments consumed. */
static const char *arg_value(char **argv, int argc, int i, const char *opt, int *skip)
{
    const char *a = argv[i];
    if (a[0] == '-' && a[1] == '-' && opt[0] == '-' && opt[1] != '-')
        a++; /* QEMU takes --name for -name */
    size_t n = strlen(opt);
    if (strncmp(a, opt, n))
        return NULL;
    if (a[n] == '=') {
        *skip = 1;
        return a + n + 1;
    }
    if (a[n] || i + 1 >= argc)
        return NULL;
    *skip = 2;
    return argv[i + 1];
}

/* The name of an API socket's file, without its extension; its folder's
 * name when the file is named for the program, not the VM ("clh-api.sock"
 * in Kata's /run/vc/vm/ID/). */
static void socket_name(const char *path, char *out, size_t len)
{
    static const char *const generic[] = {"api",    "clh-api", "firecracker",
                                          "fc",     "ch",      "cloud-hypervisor",
                                          "socket", "vm",      "api-socket"};
    char buf[512];
    CP(buf, path);
    for (int tries = 0; tries < 2; tries++) {
        char *slash = strrchr(buf, '/');
        char *b = slash ? slash + 1 : buf;
        char *dot = strchr(b, '.');
        if (dot && dot != b)
            *dot = '\0';
        int gen = 0;
        for (size_t k = 0; k < sizeof(generic) / sizeof(generic[0]); k++)
            gen |= !strcmp(b, generic[k]);
        if (tries && (!strcmp(b, "tmp") || !strcmp(b, "run") || !strcmp(b, "sockets")))
            return; /* a shared folder names no VM */
        if (*b && !gen) {
            cpy(out, len, b);
            return;
        }
        if (!slash)
            return;
        *slash = '\0';
    }
}

static void parse_qemu(char **argv, int argc, pa_vm_info *o)
{
    char v[256];
    for (int i = 1, skip = 1; i < argc; i += skip) {
        skip = 1;
        const char *val;
        if ((val = arg_value(argv, argc, i, "-name", &skip))) {
            if (qemu_opt(val, "guest", "guest", v, sizeof(v))) {
                CP(o->name, v);
                add_source(o->source, sizeof(o->source), "qemu -name");
            }
        } else if ((val = arg_value(argv, argc, i, "-uuid", &skip))) {
            if (is_uuid(val))
                CP(o->uuid, val);
        } else if ((val = arg_value(argv, argc, i, "-smbios", &skip))) {
            if (!o->uuid[0] && qemu_opt(val, "type", NULL, v, sizeof(v)) && !strcmp(v, "1") &&
                qemu_opt(val, "uuid", NULL, v, sizeof(v)) && is_uuid(v))
                CP(o->uuid, v);
        } else if ((val = arg_value(argv, argc, i, "-id", &skip))) {
            CP(o->id, val); /* Proxmox's VMID */
        }
    }
}

static void parse_firecracker(char **argv, int argc, pa_vm_info *o)
{
    const char *id = NULL, *sock = NULL, *val;
    for (int i = 1, skip = 1; i < argc; i += skip) {
        skip = 1;
        if ((val = arg_value(argv, argc, i, "--id", &skip)))
            id = val;
        else if ((val = arg_value(argv, argc, i, "--api-sock", &skip)))
            sock = val;
    }
    if (id && *id && strcmp(id, "anonymous-instance")) { /* Firecracker's default id */
        CP(o->name, id);
        CP(o->id, id);
        add_source(o->source, sizeof(o->source), "firecracker --id");
    } else if (sock) {
        socket_name(sock, o->name, sizeof(o->name));
        if (o->name[0])
            add_source(o->source, sizeof(o->source), "firecracker api socket");
    }
}

static void parse_ch(char **argv, int argc, pa_vm_info *o)
{
    const char *val;
    for (int i = 1, skip = 1; i < argc; i += skip) {
        skip = 1;
        if (!(val = arg_value(argv, argc, i, "--api-socket", &skip)))
            continue;
        char path[512];
        if (!qemu_opt(val, "path", "path", path, sizeof(path)))
            continue;
        socket_name(path, o->name, sizeof(o->name));
        if (o->name[0])
            add_source(o->source, sizeof(o->source), "cloud-hypervisor api socket");
    }
}

#define MAX_ARGS 4096

int pa_vm_parse_cmdline(const char *cmdline, size_t len, pa_vm_info *out)
{
    if (!cmdline || !out)
        return pa__err(-EINVAL, "pa_vm_parse_cmdline: NULL argument");
    memset(out, 0, sizeof(*out));
    char *buf = malloc(len + 1);
    char **argv = calloc(MAX_ARGS, sizeof(*argv));
    int argc = 0, rc = -ENOENT;
    if (!buf || !argv) {
        rc = pa__err(-ENOMEM, "pa_vm_parse_cmdline: out of memory");
        goto fail;
    }
    memcpy(buf, cmdline, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len && argc < MAX_ARGS; i += strlen(buf + i) + 1)
        argv[argc++] = buf + i;
    hv h = argc ? hv_of(argv[0]) : HV_NONE;
    if (h == HV_QEMU) {
        CP(out->hypervisor, "qemu");
        parse_qemu(argv, argc, out);
    } else if (h == HV_FIRECRACKER) {
        CP(out->hypervisor, "firecracker");
        parse_firecracker(argv, argc, out);
    } else if (h == HV_CH) {
        CP(out->hypervisor, "cloud-hypervisor");
        parse_ch(argv, argc, out);
    }
    rc = h == HV_NONE ? -ENOENT : 0;
fail:
    free(buf);
    free(argv);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Cgroups                                                             */
/* ------------------------------------------------------------------ */

/* systemd's unit name escaping undone ("\x2d" -> '-'); 0, or -1 when
 * malformed. */
static int unescape(const char *s, size_t n, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 3 < n && s[i + 1] == 'x' && isxdigit((unsigned char)s[i + 2]) &&
            isxdigit((unsigned char)s[i + 3])) {
            char hex[3] = {s[i + 2], s[i + 3], 0};
            c = (char)strtol(hex, NULL, 16);
            i += 3;
        }
        if (c == '\0' || o + 1 >= len)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* "qemu-N-NAME" (libvirt's machine name): id and name. */
static int libvirt_machine(const char *m, pa_vm_info *o)
{
    if (strncmp(m, "qemu-", 5) || !isdigit((unsigned char)m[5]))
        return 0;
    const char *p = m + 5;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p != '-' || !p[1] || (size_t)(p - m - 5) >= sizeof(o->id))
        return 0;
    memcpy(o->id, m + 5, (size_t)(p - m - 5));
    o->id[p - m - 5] = '\0';
    CP(o->name, p + 1);
    return 1;
}

/* Component c (n bytes) as a VM's cgroup; 1 when it is one. */
static int vm_component(const char *c, size_t n, const char *parent, size_t pn, pa_vm_info *o)
{
    char u[256];
    size_t sl = strlen(".scope"), ll = strlen(".libvirt-qemu");
    if (n > 8 + sl && !strncmp(c, "machine-", 8) && !strncmp(c + n - sl, ".scope", sl)) {
        if (unescape(c + 8, n - 8 - sl, u, sizeof(u)) < 0 || !libvirt_machine(u, o))
            return 0;
    } else if (n > ll && !strncmp(c + n - ll, ".libvirt-qemu", ll)) {
        if (unescape(c, n - ll, u, sizeof(u)) < 0)
            return 0;
        if (!libvirt_machine(u, o))
            CP(o->name, u); /* libvirt before 4.x: the domain's name alone */
    } else if (n > sl && pn == strlen("qemu.slice") && !strncmp(parent, "qemu.slice", pn) &&
               !strncmp(c + n - sl, ".scope", sl)) {
        for (size_t i = 0; i < n - sl; i++)
            if (!isdigit((unsigned char)c[i]))
                return 0;
        if (n - sl >= sizeof(o->id))
            return 0;
        memcpy(o->id, c, n - sl);
        o->id[n - sl] = '\0';
        CP(o->manager, "proxmox");
        return 1;
    } else {
        return 0;
    }
    CP(o->manager, "libvirt");
    add_source(o->source, sizeof(o->source), "libvirt cgroup");
    return 1;
}

int pa_vm_parse_cgroup(const char *path, pa_vm_info *out)
{
    if (!path || !out)
        return pa__err(-EINVAL, "pa_vm_parse_cgroup: NULL argument");
    memset(out, 0, sizeof(*out));
    const char *parent = "", *c = path;
    size_t pn = 0;
    while (*c) {
        while (*c == '/')
            c++;
        size_t n = strcspn(c, "/");
        if (!n)
            break;
        if (vm_component(c, n, parent, pn, out)) {
            size_t end = (size_t)(c - path) + n;
            if (end < sizeof(out->cgroup)) {
                memcpy(out->cgroup, path, end);
                out->cgroup[end] = '\0';
            }
            return 0;
        }
        memset(out, 0, sizeof(*out));
        parent = c;
        pn = n;
        c += n;
    }
    return -ENOENT;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

/* The decimal at s up to end (exclusive, or NUL when end is NULL); -1
 * when none or too large. */
static int index_at(const char *s, const char *end)
{
    long v = 0;
    const char *p = s;
    for (; (end ? p < end : *p) && isdigit((unsigned char)*p); p++)
        if ((v = v * 10 + (*p - '0')) > 1000000)
            return -1;
    if (p == s || (end ? p != end : *p != '\0'))
        return -1;
    return (int)v;
}

int pa_vm_vcpu_index(const char *comm)
{
    if (!comm)
        return -1;
    size_t n = strnlen(comm, 64);
    while (n && comm[n - 1] == '\n')
        n--; /* as read from the file */
    if (n > 4 && !strncmp(comm, "CPU ", 4)) {
        const char *slash = memchr(comm, '/', n);
        if (slash && comm + n - slash == 4 &&
            (!strncmp(slash, "/KVM", 4) || !strncmp(slash, "/TCG", 4) ||
             !strncmp(slash, "/HVF", 4)))
            return index_at(comm + 4, slash);
        return -1;
    }
    if (n > 8 && !strncmp(comm, "fc_vcpu ", 8))
        return index_at(comm + 8, comm + n);
    if (n > 4 && !strncmp(comm, "vcpu", 4))
        return index_at(comm + 4, comm + n);
    return -1;
}
