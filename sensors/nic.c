/*
 * nic.c - the "nic" sensor: network interfaces and per-process TCP bytes.
 *
 * System-wide, per interface (pa_frame_nic_set):
 *   <sysfs>/class/net/<if>/statistics/{rx,tx}_{bytes,packets}  cumulative
 *   <sysfs>/class/net/<if>/speed    Mb/s; -1 or unreadable (link down,
 *                                   virtual device) gives 0 = unknown
 *   <sysfs>/class/net/<if>/type     772 (ARPHRD_LOOPBACK) = loopback
 *   <sysfs>/class/net/<if>/device   present for a physical device;
 *                                   device/driver links to the driver
 *   <procfs>/net/dev                fallback for the counters when sysfs
 *                                   has no class/net (then the kind is
 *                                   guessed from the name, see kind_by_name)
 *
 * Per process (task->cur.net_rx / net_tx, PA_RD_NET): TCP payload bytes
 * from netlink sock_diag (INET_DIAG_INFO: tcp_info.tcpi_bytes_received and
 * tcpi_bytes_acked, IPv4 and IPv6), mapped to processes by the socket
 * inode found in <procfs>/<pid>/fd ("socket:[inode]").
 *
 *   - The sensor keeps one record per socket, keyed by the kernel's socket
 *     cookie, with the last byte counts seen and the owner.  Each tick adds
 *     the difference to the owner's running total, so a socket that closes
 *     keeps what it moved up to its last sighting (the bytes it moved after
 *     that, before closing, are lost).  A socket closed by its process but
 *     still draining (FIN_WAIT, LAST_ACK: inode 0 in the dump) keeps its
 *     owner through the cookie and its last bytes are counted too.
 *   - The inode -> pid map is incremental: a process's fd folder is read
 *     once when the process first appears, and afterwards only when a
 *     socket with an unknown inode shows up; the scan stops as soon as
 *     every unknown inode is found (processes that opened sockets recently
 *     first).  Sockets no watched process holds are remembered as foreign
 *     and not searched for again.
 *   - Sockets seen for the first time on the first tick are a baseline;
 *     later new sockets count all their bytes (they were opened in the
 *     window).
 *   - Each socket is classed once, by its addresses: loopback (127/8, ::1,
 *     a peer that is one of this host's socket addresses, an IPv6 local
 *     route), else the interface of the route to the peer
 *     (<procfs>/net/route, <procfs>/net/ipv6_route) gives physical or
 *     virtual.  pa_frame_task_net and pa_frame_sock_bytes_set carry the bytes
 *     by class so that nic-linear prices only what crossed a real NIC.
 *   - UDP is not covered: the kernel keeps no per-socket byte counters for
 *     it (sock_diag gives queue sizes only).  Neither are sockets of other
 *     network namespaces (sock_diag answers for the sensor's namespace).
 *   - Threads get no network bytes: sockets belong to processes.
 *
 * Options:
 *   sockdiag=auto|on|off  per-process bytes through sock_diag; auto (the
 *                         default) falls back to interface totals when
 *                         netlink refuses, on makes that an error, off
 *                         skips it.
 *   sockfile=PATH         read the socket table from a text file instead of
 *                         netlink (tests and replays; relative to the procfs
 *                         root unless absolute).  One socket per line:
 *                         "tcp <cookie> <inode> <local> <peer> <rx> <tx>",
 *                         addresses as 10.0.0.1:80 or [fd00::1]:80, rx the
 *                         tcpi_bytes_received, tx the tcpi_bytes_acked;
 *                         '#' starts a comment.
 *
 * Degradation: no sock_diag, or fd folders unreadable (not root, other
 * users' processes): those processes get no network reading and the module
 * message says so once; the tick does not fail.
 */
#include "nic.h"
#include "powerapi_module.h"
#include "util.h" /* hashing, growable arrays, hex digits */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h> /* not <netinet/tcp.h>: its tcp_info lacks the byte fields */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NIC_PATH_MAX 4096

/* TCP states (include/net/tcp_states.h, not exported to user space). */
enum {
    NIC_TCP_SYN_RECV = 3,
    NIC_TCP_TIME_WAIT = 6,
    NIC_TCP_LISTEN = 10,
};
/* Every state but the three that move no payload of their own (and carry
 * no tcp_info for time-wait and request sockets). */
#define NIC_TCP_STATES                                                                             \
    (0xfffu & ~((1u << NIC_TCP_SYN_RECV) | (1u << NIC_TCP_TIME_WAIT) | (1u << NIC_TCP_LISTEN)))

#define NIC_OWNER_UNKNOWN 0
#define NIC_OWNER_FOREIGN (-1)

typedef enum nic_mode {
    NIC_SD_AUTO = 0,
    NIC_SD_ON,
    NIC_SD_OFF,
} nic_mode;

/* One socket of this tick's table. */
typedef struct nic_obs {
    uint64_t cookie;
    uint32_t inode;
    uint8_t family; /* AF_INET / AF_INET6 */
    uint8_t src[16], dst[16];
    uint64_t rx, tx; /* cumulative payload bytes */
} nic_obs;

/* What the sensor remembers of a socket. */
typedef struct nic_sock {
    uint64_t cookie;
    uint32_t inode;
    pid_t owner;     /* pid, NIC_OWNER_UNKNOWN or NIC_OWNER_FOREIGN */
    uint8_t kind;    /* pa_nic_kind */
    uint64_t rx, tx; /* last values seen */
} nic_sock;

/* A process's running totals. */
typedef struct nic_fdent {
    int fd;
    uint32_t inode;
} nic_fdent;

typedef struct nic_proc {
    pid_t pid;
    uint64_t start_ticks;
    bool scanned;            /* fd folder read at least once */
    uint64_t scan_tick;      /* last tick it was read */
    bool unreadable;         /* fd folder refused (EACCES) */
    uint64_t last_sock_tick; /* last tick a socket was found in it */
    uint64_t rx, tx;
    uint64_t kind_bytes[3];
    nic_fdent *fds; /* socket fds of the last scan, by fd */
    size_t nfds;
} nic_proc;

typedef struct nic_route4 {
    uint32_t dst, mask; /* network order */
    int iface;          /* kind of the interface (pa_nic_kind) */
    int plen;
} nic_route4;

typedef struct nic_route6 {
    uint8_t dst[16];
    int plen;
    int kind;
} nic_route6;

typedef struct nic_addr {
    uint8_t family;
    uint8_t addr[16]; /* IPv4 in the first 4 bytes */
} nic_addr;

typedef struct nic_priv {
    nic_mode mode;
    char sockfile[NIC_PATH_MAX];
    int nl; /* netlink socket or -1 */
    uint32_t seq;
    bool degraded; /* per-process bytes off: told once */
    bool told_fd;  /* unreadable fd folders: told once */
    bool primed;   /* first socket table taken */
    bool no_v6;    /* the kernel refused the IPv6 dump */

    unsigned char *buf; /* netlink receive buffer */
    size_t buf_len;

    nic_obs *obs; /* this tick's dump */
    size_t nobs, obs_cap;

    /* socket table (cookie -> record), double-buffered: rebuilt each tick
     * from the dump so closed sockets simply drop out */
    nic_sock *socks, *socks_new;
    size_t nsocks, socks_cap, socks_new_cap;
    int32_t *sidx; /* open addressing over socks: index or -1 */
    size_t sidx_cap;

    nic_proc *procs, *procs_new;
    size_t nprocs, procs_cap, procs_new_cap;
    int32_t *pidx;
    size_t pidx_cap;

    int32_t *iidx; /* scratch: inode -> index in socks (unowned) */
    size_t iidx_cap;

    uint64_t sock_bytes[3]; /* every socket, by class, cumulative */

    /* routes and interface kinds, read when a new socket needs a class */
    nic_route4 *r4;
    size_t nr4, r4_cap;
    nic_route6 *r6;
    size_t nr6, r6_cap;
    uint64_t routes_tick;
    nic_addr *local;
    size_t nlocal, local_cap;
    pa_nic_reading ifs[PA_MAX_IFACES]; /* this tick's interfaces */
    unsigned nifs;
} nic_priv;

static const char *const nic_options[] = {"sockdiag", "sockfile", NULL};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c <<= 1;
    return c;
}

/* (Re)builds an index of n entries; key(i) gives entry i's key. */
static int index_alloc(int32_t **idx, size_t *cap, size_t n)
{
    size_t want = pow2_at_least(n * 2 + 1);
    if (want > *cap) {
        int32_t *v = malloc(want * sizeof *v);
        if (!v)
            return -ENOMEM;
        free(*idx);
        *idx = v;
        *cap = want;
    }
    memset(*idx, 0xff, *cap * sizeof **idx);
    return 0;
}

static int32_t sock_find(const nic_priv *p, uint64_t cookie)
{
    if (!p->sidx_cap)
        return -1;
    size_t mask = p->sidx_cap - 1;
    for (size_t h = pa__hash_u64(cookie) & mask;; h = (h + 1) & mask) {
        int32_t i = p->sidx[h];
        if (i < 0)
            return -1;
        if (p->socks[i].cookie == cookie)
            return i;
    }
}

static void sock_index_put(int32_t *idx, size_t cap, uint64_t cookie, int32_t i)
{
    size_t mask = cap - 1;
    size_t h = pa__hash_u64(cookie) & mask;
    while (idx[h] >= 0)
        h = (h + 1) & mask;
    idx[h] = i;
}

static int32_t proc_find(const nic_proc *v, const int32_t *idx, size_t cap, pid_t pid)
{
    if (!cap)
        return -1;
    size_t mask = cap - 1;
    for (size_t h = pa__hash_u64((uint64_t)pid) & mask;; h = (h + 1) & mask) {
        int32_t i = idx[h];
        if (i < 0)
            return -1;
        if (v[i].pid == pid)
            return i;
    }
}

static int32_t inode_find(const nic_priv *p, uint32_t inode)
{
    size_t mask = p->iidx_cap - 1;
    for (size_t h = pa__hash_u64(inode) & mask;; h = (h + 1) & mask) {
        int32_t i = p->iidx[h];
        if (i < 0)
            return -1;
        if (p->socks[i].inode == inode)
            return i;
    }
}

static int read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int err = errno;
    close(fd);
    if (n < 0)
        return -err;
    buf[n] = '\0';
    return (int)n;
}

static int read_u64_file(const char *path, uint64_t *out)
{
    char buf[64];
    int n = read_small(path, buf, sizeof buf);
    if (n < 0)
        return n;
    const char *s = buf;
    while (*s == ' ')
        s++;
    return pa_u64_parse(&s, out);
}

/* ------------------------------------------------------------------ */
/* Interfaces                                                          */
/* ------------------------------------------------------------------ */

/* Without sysfs the kind is guessed from common names of virtual
 * devices; anything else is taken as physical. */
static pa_nic_kind kind_by_name(const char *name)
{
    static const char *const virt[] = {"veth",    "br",     "docker", "virbr", "vnet",    "tun",
                                       "tap",     "wg",     "dummy",  "cni",   "flannel", "cali",
                                       "vxlan",   "ifb",    "kube",   "lxc",   "bond",    "team",
                                       "macvlan", "ipvlan", "gre",    "sit",   "ip6tnl",  NULL};
    if (strcmp(name, "lo") == 0)
        return PA_NIC_LOOPBACK;
    for (size_t i = 0; virt[i]; i++)
        if (strncmp(name, virt[i], strlen(virt[i])) == 0)
            return PA_NIC_VIRTUAL;
    return PA_NIC_PHYSICAL;
}

/* /proc/net/dev: "  eth0: rxbytes rxpackets errs drop fifo frame compressed
 * multicast txbytes txpackets ..." (two header lines).  With want set,
 * fills only that interface's counters; else appends every interface. */
static int read_proc_net_dev(const pa_env *env, pa_nic_reading *v, unsigned *n, const char *want)
{
    char path[NIC_PATH_MAX];
    int err = pa_path_join(path, sizeof path, pa_env_procfs(env), "net/dev");
    if (err < 0)
        return err;
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    char line[512];
    int found = want ? -ENOENT : 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *name = line;
        while (*name == ' ')
            name++;
        if (!*name || strlen(name) >= sizeof v->name)
            continue;
        uint64_t val[16];
        const char *s = colon + 1;
        int k;
        for (k = 0; k < 16; k++) {
            while (*s == ' ' || *s == '\t')
                s++;
            if (pa_u64_parse(&s, &val[k]) < 0)
                break;
        }
        if (k < 10)
            continue; /* malformed line: reject rather than guess */
        pa_nic_reading *r;
        if (want) {
            if (strcmp(name, want) != 0)
                continue;
            r = v;
            found = 0;
        } else {
            if (*n >= PA_MAX_IFACES)
                break;
            r = &v[(*n)++];
            memset(r, 0, sizeof *r);
            snprintf(r->name, sizeof r->name, "%.15s", name); /* IFNAMSIZ */
            r->kind = kind_by_name(name);
        }
        r->rx_bytes = val[0];
        r->rx_packets = val[1];
        r->tx_bytes = val[8];
        r->tx_packets = val[9];
        if (want)
            break;
    }
    fclose(f);
    return found;
}

static void read_link_base(const char *path, char *out, size_t len)
{
    char link[NIC_PATH_MAX];
    ssize_t n = readlink(path, link, sizeof link - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    link[n] = '\0';
    const char *b = strrchr(link, '/');
    b = b ? b + 1 : link;
    size_t n2 = strlen(b);
    if (n2 >= len)
        n2 = len - 1;
    memcpy(out, b, n2);
    out[n2] = '\0';
}

static int kind_rank(pa_nic_kind k)
{
    return k == PA_NIC_PHYSICAL ? 0 : k == PA_NIC_LOOPBACK ? 1 : 2;
}

static int cmp_iface(const void *a, const void *b)
{
    const pa_nic_reading *x = a, *y = b;
    int d = kind_rank(x->kind) - kind_rank(y->kind);
    return d ? d : strcmp(x->name, y->name);
}

/* Reads every interface into p->ifs.  Physical and loopback interfaces come
 * first so that a host with hundreds of veths keeps its real NICs when the
 * table is full. */
static int read_interfaces(const pa_env *env, nic_priv *p)
{
    char path[NIC_PATH_MAX];
    int err = pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net");
    if (err < 0)
        return err;
    DIR *d = opendir(path);
    p->nifs = 0;
    if (!d)
        return read_proc_net_dev(env, p->ifs, &p->nifs, NULL);

    /* collect more than fit, then keep the most useful */
    enum { NIC_SCAN_MAX = 4 * PA_MAX_IFACES };
    pa_nic_reading *all = calloc(NIC_SCAN_MAX, sizeof *all);
    if (!all) {
        closedir(d);
        return -ENOMEM;
    }
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < NIC_SCAN_MAX) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof all->name)
            continue;
        pa_nic_reading *r = &all[n];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%.15s", e->d_name); /* IFNAMSIZ */
        char buf[64];
        uint64_t v;
        /* type: ARPHRD_* (if_arp.h); 772 is loopback */
        if (pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net/%s/type", r->name) == 0 &&
            read_u64_file(path, &v) == 0 && v == 772)
            r->kind = PA_NIC_LOOPBACK;
        else {
            struct stat st;
            pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net/%s/device", r->name);
            r->kind = stat(path, &st) == 0 ? PA_NIC_PHYSICAL : PA_NIC_VIRTUAL;
            if (r->kind == PA_NIC_PHYSICAL) {
                pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net/%s/device/driver",
                             r->name);
                read_link_base(path, r->driver, sizeof r->driver);
            }
        }
        /* speed: Mb/s; -1 (unknown), EINVAL (down, virtual) give 0 */
        if (pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net/%s/speed", r->name) ==
                0 &&
            read_small(path, buf, sizeof buf) > 0) {
            const char *s = buf;
            if (*s != '-' && pa_u64_parse(&s, &v) == 0 && v <= UINT32_MAX)
                r->speed_mbps = (uint32_t)v;
        }
        static const char *const stat_names[] = {"rx_bytes", "tx_bytes", "rx_packets",
                                                 "tx_packets"};
        uint64_t *dst[] = {&r->rx_bytes, &r->tx_bytes, &r->rx_packets, &r->tx_packets};
        bool ok = true;
        for (int k = 0; k < 4 && ok; k++)
            ok = pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net/%s/statistics/%s",
                              r->name, stat_names[k]) == 0 &&
                 read_u64_file(path, dst[k]) == 0;
        if (!ok && read_proc_net_dev(env, r, NULL, r->name) < 0)
            continue; /* no counters anywhere: skip the interface */
        n++;
    }
    closedir(d);
    qsort(all, n, sizeof *all, cmp_iface);
    if (n > PA_MAX_IFACES)
        n = PA_MAX_IFACES;
    memcpy(p->ifs, all, n * sizeof *all);
    p->nifs = n;
    free(all);
    if (!n) /* an empty (or unreadable) class/net: try the proc file */
        return read_proc_net_dev(env, p->ifs, &p->nifs, NULL);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Routes and classes                                                  */
/* ------------------------------------------------------------------ */

static int iface_kind(const nic_priv *p, const char *name)
{
    for (unsigned i = 0; i < p->nifs; i++)
        if (strcmp(p->ifs[i].name, name) == 0)
            return p->ifs[i].kind;
    if (strcmp(name, "lo") == 0)
        return PA_NIC_LOOPBACK;
    return kind_by_name(name);
}

/* <procfs>/net/route: "Iface Destination Gateway Flags RefCnt Use Metric
 * Mask ..." with addresses as hex of the network-order word, and
 * <procfs>/net/ipv6_route: "dst plen src plen nexthop metric refcnt use
 * flags iface" (every table, local routes flagged RTF_LOCAL). */
static void read_routes(const pa_env *env, nic_priv *p)
{
    char path[NIC_PATH_MAX], line[512];
    p->nr4 = p->nr6 = 0;
    if (pa_path_join(path, sizeof path, pa_env_procfs(env), "net/route") == 0) {
        FILE *f = fopen(path, "re");
        if (f) {
            while (fgets(line, sizeof line, f)) {
                char ifn[32];
                unsigned dst, mask;
                if (sscanf(line, "%31s %x %*x %*x %*d %*d %*d %x", ifn, &dst, &mask) != 3)
                    continue; /* header */
                if (PA__GROW(p->r4, p->r4_cap, p->nr4 + 1, 64) < 0)
                    break;
                /* the file prints the in-memory (network-order) word in
                 * host order: reading it back with %x restores it */
                nic_route4 *r = &p->r4[p->nr4++];
                r->dst = dst;
                r->mask = mask;
                r->plen = __builtin_popcount(mask);
                r->iface = iface_kind(p, ifn);
            }
            fclose(f);
        }
    }
    if (pa_path_join(path, sizeof path, pa_env_procfs(env), "net/ipv6_route") == 0) {
        FILE *f = fopen(path, "re");
        if (f) {
            while (fgets(line, sizeof line, f)) {
                char dst[40], ifn[32];
                unsigned plen, flags;
                if (sscanf(line, "%32s %x %*s %*x %*s %*x %*x %*x %x %31s", dst, &plen, &flags,
                           ifn) != 4 ||
                    strlen(dst) != 32 || plen > 128)
                    continue;
                if (PA__GROW(p->r6, p->r6_cap, p->nr6 + 1, 64) < 0)
                    break;
                nic_route6 *r = &p->r6[p->nr6];
                if (pa__hex_decode(dst, r->dst, 16) < 0)
                    continue;
                r->plen = (int)plen;
                /* RTF_LOCAL (0x80000000): an address of this host */
                r->kind = (flags & 0x80000000u) ? PA_NIC_LOOPBACK : iface_kind(p, ifn);
                p->nr6++;
            }
            fclose(f);
        }
    }
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, int plen)
{
    int full = plen / 8, rest = plen % 8;
    if (memcmp(a, b, (size_t)full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t m = (uint8_t)(0xff << (8 - rest));
    return (a[full] & m) == (b[full] & m);
}

static bool v4mapped(const uint8_t *a)
{
    static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, pre, 12) == 0;
}

/* The distinct local addresses of this tick's sockets: a peer with one of
 * them is this host.  Few distinct values on any host, so a flat list. */
static void collect_local(nic_priv *p)
{
    p->nlocal = 0;
    for (size_t i = 0; i < p->nobs; i++) {
        nic_addr a = {.family = p->obs[i].family};
        memcpy(a.addr, p->obs[i].src, 16);
        if (a.family == AF_INET6 && v4mapped(a.addr)) {
            a.family = AF_INET;
            memmove(a.addr, a.addr + 12, 4);
            memset(a.addr + 4, 0, 12);
        }
        size_t j;
        for (j = 0; j < p->nlocal; j++)
            if (memcmp(&p->local[j], &a, sizeof a) == 0)
                break;
        if (j < p->nlocal)
            continue;
        if (PA__GROW(p->local, p->local_cap, p->nlocal + 1, 64) < 0)
            return;
        p->local[p->nlocal++] = a;
    }
}

static bool is_local_addr(const nic_priv *p, int fam, const uint8_t *a)
{
    size_t alen = fam == AF_INET ? 4 : 16;
    for (size_t i = 0; i < p->nlocal; i++)
        if (p->local[i].family == fam && memcmp(p->local[i].addr, a, alen) == 0)
            return true;
    return false;
}

static pa_nic_kind classify(const pa_env *env, nic_priv *p, uint64_t tick, const nic_obs *o)
{
    int fam = o->family;
    const uint8_t *src = o->src, *dst = o->dst;
    if (fam == AF_INET6 && v4mapped(dst)) {
        fam = AF_INET;
        dst += 12;
        src += 12;
    }
    size_t alen = fam == AF_INET ? 4 : 16;
    static const uint8_t lo6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if ((fam == AF_INET && dst[0] == 127) || (fam == AF_INET6 && memcmp(dst, lo6, 16) == 0) ||
        memcmp(src, dst, alen) == 0)
        return PA_NIC_LOOPBACK;
    if (p->routes_tick != tick + 1) { /* once per tick, when needed */
        read_routes(env, p);
        collect_local(p);
        p->routes_tick = tick + 1;
    }
    int best = -1, kind = PA_NIC_PHYSICAL;
    if (fam == AF_INET) {
        uint32_t d;
        memcpy(&d, dst, 4);
        for (size_t i = 0; i < p->nr4; i++)
            if ((d & p->r4[i].mask) == (p->r4[i].dst & p->r4[i].mask) && p->r4[i].plen > best) {
                best = p->r4[i].plen;
                kind = p->r4[i].iface;
            }
    } else {
        for (size_t i = 0; i < p->nr6; i++)
            if (p->r6[i].plen > best && prefix_match(dst, p->r6[i].dst, p->r6[i].plen)) {
                best = p->r6[i].plen;
                kind = p->r6[i].kind;
            }
    }
    if (kind != PA_NIC_LOOPBACK && is_local_addr(p, fam, dst))
        return PA_NIC_LOOPBACK;
    return (pa_nic_kind)kind;
}

/* ------------------------------------------------------------------ */
/* Socket table: netlink or a text file                                */
/* ------------------------------------------------------------------ */

static nic_obs *obs_add(nic_priv *p)
{
    if (PA__GROW(p->obs, p->obs_cap, p->nobs + 1, 64) < 0)
        return NULL;
    nic_obs *o = &p->obs[p->nobs++];
    memset(o, 0, sizeof *o);
    return o;
}

/* Adds the sockets of one recv() of a sock_diag dump (the messages of
 * sequence seq; others are skipped) to p->obs.  Returns 1 when the dump
 * ended (NLMSG_DONE), 0 when more is to come, or the kernel's error
 * (NLMSG_ERROR) or -ENOMEM.  buf is aligned as a recv() buffer. */
static int parse_diag(nic_priv *p, const void *buf, ssize_t n, uint32_t seq)
{
    const size_t need = offsetof(struct tcp_info, tcpi_bytes_received) +
                        sizeof(((struct tcp_info *)0)->tcpi_bytes_received);
    /* Walked by hand rather than with NLMSG_NEXT: on a message whose
     * aligned length passes the end, NLMSG_NEXT makes the remaining length
     * negative and NLMSG_OK then reads past the buffer. */
    const char *at = buf;
    size_t left = n > 0 ? (size_t)n : 0;
    while (left >= sizeof(struct nlmsghdr)) {
        const struct nlmsghdr *h = (const struct nlmsghdr *)at;
        if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > left)
            break;
        size_t step = NLMSG_ALIGN(h->nlmsg_len);
        if (step > left)
            step = left;
        at += step;
        left -= step;
        if (h->nlmsg_seq != seq)
            continue;
        if (h->nlmsg_type == NLMSG_DONE)
            return 1;
        if (h->nlmsg_type == NLMSG_ERROR) {
            /* a negative errno, or the message is not one the kernel
             * sends */
            const struct nlmsgerr *e = NLMSG_DATA(h);
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || e->error >= 0 || e->error < -4095)
                return -EIO;
            return e->error;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
            h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
            continue;
        const struct inet_diag_msg *m = NLMSG_DATA(h);
        const struct tcp_info *ti = NULL;
        int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
        for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, alen);
             a = RTA_NEXT(a, alen))
            if (a->rta_type == INET_DIAG_INFO && (size_t)RTA_PAYLOAD(a) >= need)
                ti = RTA_DATA(a);
        if (!ti)
            continue;
        nic_obs *o = obs_add(p);
        if (!o)
            return -ENOMEM;
        o->cookie = (uint64_t)m->id.idiag_cookie[1] << 32 | m->id.idiag_cookie[0];
        o->inode = m->idiag_inode;
        o->family = m->idiag_family;
        memcpy(o->src, m->id.idiag_src, 16);
        memcpy(o->dst, m->id.idiag_dst, 16);
        /* tcp_info may be unaligned in the message */
        memcpy(&o->rx, (const char *)ti + offsetof(struct tcp_info, tcpi_bytes_received), 8);
        memcpy(&o->tx, (const char *)ti + offsetof(struct tcp_info, tcpi_bytes_acked), 8);
    }
    return 0;
}

int pa__nic_diag_parse(const void *buf, size_t len, uint32_t seq, size_t *nsockets)
{
    nic_priv p;
    memset(&p, 0, sizeof(p));
    int rc = parse_diag(&p, buf, (ssize_t)len, seq);
    *nsockets = p.nobs;
    free(p.obs);
    return rc;
}

static int dump_family(nic_priv *p, int family)
{
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 req;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.nlh.nlmsg_seq = ++p->seq;
    msg.req.sdiag_family = (uint8_t)family;
    msg.req.sdiag_protocol = IPPROTO_TCP;
    msg.req.idiag_ext = 1u << (INET_DIAG_INFO - 1);
    msg.req.idiag_states = NIC_TCP_STATES;
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(p->nl, &msg, sizeof msg, 0, (struct sockaddr *)&sa, sizeof sa) < 0)
        return -errno;

    for (;;) {
        ssize_t n = recv(p->nl, p->buf, p->buf_len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        int rc = parse_diag(p, p->buf, n, p->seq);
        if (rc != 0)
            return rc > 0 ? 0 : rc;
    }
}

static bool parse_endpoint(const char *s, int *fam, uint8_t *addr)
{
    char host[64];
    memset(addr, 0, 16);
    if (*s == '[') {
        const char *e = strchr(s, ']');
        if (!e || (size_t)(e - s - 1) >= sizeof host)
            return false;
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = '\0';
        *fam = AF_INET6;
        return inet_pton(AF_INET6, host, addr) == 1;
    }
    const char *c = strrchr(s, ':');
    if (!c || (size_t)(c - s) >= sizeof host)
        return false;
    memcpy(host, s, (size_t)(c - s));
    host[c - s] = '\0';
    *fam = AF_INET;
    return inet_pton(AF_INET, host, addr) == 1;
}

static int read_sockfile(const pa_env *env, nic_priv *p)
{
    char path[NIC_PATH_MAX];
    int err;
    if (p->sockfile[0] == '/')
        err = pa_path_join(path, sizeof path, "", "%s", p->sockfile);
    else
        err = pa_path_join(path, sizeof path, pa_env_procfs(env), "%s", p->sockfile);
    if (err < 0)
        return err;
    FILE *f = fopen(path, "re");
    if (!f)
        return pa_error_set(-errno, "nic: cannot read the socket file %s: %s", path,
                            strerror(errno));
    char line[512];
    unsigned lineno = 0;
    err = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char proto[8], src[64], dst[64];
        unsigned long long cookie, inode, rx, tx;
        int k = sscanf(line, "%7s %llu %llu %63s %63s %llu %llu", proto, &cookie, &inode, src, dst,
                       &rx, &tx);
        if (k <= 0)
            continue;
        int f1, f2;
        nic_obs o = {0};
        if (k != 7 || strcmp(proto, "tcp") != 0 || inode > UINT32_MAX ||
            !parse_endpoint(src, &f1, o.src) || !parse_endpoint(dst, &f2, o.dst) || f1 != f2) {
            err = pa_error_set(-EINVAL,
                               "nic: %s line %u: expected \"tcp <cookie> <inode> "
                               "<local> <peer> <rx> <tx>\"",
                               path, lineno);
            break;
        }
        nic_obs *n = obs_add(p);
        if (!n) {
            err = -ENOMEM;
            break;
        }
        o.cookie = cookie;
        o.inode = (uint32_t)inode;
        o.family = (uint8_t)f1;
        o.rx = rx;
        o.tx = tx;
        *n = o;
    }
    fclose(f);
    return err;
}

/* Errors that mean "this kernel will not answer", as opposed to a dump
 * that failed once. */
static bool diag_refused(int err)
{
    return err == -ENOENT || err == -EOPNOTSUPP || err == -EPROTONOSUPPORT || err == -EACCES ||
           err == -EPERM || err == -EINVAL;
}

static int take_sockets(const pa_env *env, nic_priv *p)
{
    p->nobs = 0;
    if (p->sockfile[0])
        return read_sockfile(env, p);
    if (p->nl < 0) {
        p->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (p->nl < 0)
            return -errno;
    }
    int err = dump_family(p, AF_INET);
    if (err == 0 && !p->no_v6) {
        err = dump_family(p, AF_INET6);
        if (diag_refused(err)) { /* IPv6 disabled or inet6_diag absent */
            p->no_v6 = true;
            err = 0;
        }
    }
    if (err < 0 && !diag_refused(err)) {
        /* a dump cut short leaves messages behind: start afresh */
        close(p->nl);
        p->nl = -1;
        return -EAGAIN;
    }
    return err;
}

/* ------------------------------------------------------------------ */
/* Owners: socket inodes in <procfs>/<pid>/fd                          */
/* ------------------------------------------------------------------ */

static int cmp_fdent(const void *a, const void *b)
{
    const nic_fdent *x = a, *y = b;
    return x->fd < y->fd ? -1 : x->fd > y->fd;
}

static const nic_fdent *fdent_find(const nic_proc *pr, int fd)
{
    nic_fdent key = {.fd = fd};
    if (!pr->nfds)
        return NULL;
    return bsearch(&key, pr->fds, pr->nfds, sizeof key, cmp_fdent);
}

/* Reads the fd folder of one process and claims every unowned socket
 * found in it.  An fd that held a socket at the last scan, still alive and
 * still this process's, is not read again: after the first scan, a rescan
 * costs the readdir plus one readlink per new or non-socket fd.  (An fd
 * closed and reused for another socket while the old one lives on in
 * another process, through fork or SCM_RIGHTS, is missed until that old
 * socket closes.)  Returns the number of sockets claimed or -errno. */
static int scan_fds(const pa_env *env, nic_priv *p, nic_proc *pr, uint64_t tick, size_t *pending)
{
    char path[NIC_PATH_MAX];
    int err = pa_path_join(path, sizeof path, pa_env_procfs(env), "%d/fd", (int)pr->pid);
    if (err < 0)
        return err;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        err = -errno;
        close(dfd);
        return err;
    }
    pr->scanned = true;
    pr->scan_tick = tick;
    int claimed = 0;
    struct dirent *e;
    char link[64];
    nic_fdent *nfds = NULL;
    size_t nn = 0, ncap = 0;
    bool sorted = true;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        const char *s = e->d_name;
        uint64_t fdno;
        if (pa_u64_parse(&s, &fdno) < 0 || *s || fdno > INT_MAX)
            continue;
        uint32_t ino = 0;
        const nic_fdent *old = fdent_find(pr, (int)fdno);
        int32_t i = old ? inode_find(p, old->inode) : -1;
        if (i >= 0 && p->socks[i].owner == pr->pid) {
            ino = old->inode; /* unchanged socket: no readlink */
        } else {
            ssize_t n = readlinkat(dfd, e->d_name, link, sizeof link - 1);
            if (n < 9 || memcmp(link, "socket:[", 8) != 0)
                continue;
            link[n] = '\0';
            s = link + 8;
            uint64_t v;
            if (pa_u64_parse(&s, &v) < 0 || *s != ']' || v > UINT32_MAX)
                continue;
            ino = (uint32_t)v;
            i = inode_find(p, ino);
            if (i < 0)
                continue; /* not a TCP socket of the dump */
            if (p->socks[i].owner <= 0) {
                if (p->socks[i].owner == NIC_OWNER_UNKNOWN && *pending)
                    (*pending)--;
                p->socks[i].owner = pr->pid;
                pr->last_sock_tick = tick;
                claimed++;
            }
        }
        if (PA__GROW(nfds, ncap, nn + 1, 64) < 0)
            break; /* the cache is an optimisation: keep what fits */
        if (nn && nfds[nn - 1].fd > (int)fdno)
            sorted = false;
        nfds[nn].fd = (int)fdno;
        nfds[nn++].inode = ino;
    }
    closedir(d);
    if (!sorted)
        qsort(nfds, nn, sizeof *nfds, cmp_fdent);
    free(pr->fds);
    pr->fds = nfds;
    pr->nfds = nn;
    return claimed;
}

static int cmp_recent(const void *a, const void *b)
{
    const nic_proc *x = *(nic_proc *const *)a, *y = *(nic_proc *const *)b;
    return x->last_sock_tick < y->last_sock_tick   ? 1
           : x->last_sock_tick > y->last_sock_tick ? -1
                                                   : 0;
}

static void note_fd_refused(pa_module *m, nic_priv *p, const nic_proc *pr, int err)
{
    if (p->told_fd)
        return;
    p->told_fd = true;
    pa_module_errorf(m,
                     "nic: cannot read %s/%d/fd (%s): processes whose fd "
                     "folder is unreadable get interface totals only; run as "
                     "root (or the processes' owner) for per-process bytes",
                     pa_env_procfs(pa_module_env(m)), (int)pr->pid, strerror(-err));
}

/* Finds owners for the sockets of this tick.  New processes are read
 * first, then (only while some socket's owner is unknown) the others,
 * those that opened sockets most recently first. */
static int resolve_owners(pa_module *m, nic_priv *p, uint64_t tick)
{
    const pa_env *env = pa_module_env(m);
    size_t pending = 0;
    for (size_t i = 0; i < p->nsocks; i++) {
        nic_sock *s = &p->socks[i];
        if (s->owner > 0 && proc_find(p->procs, p->pidx, p->pidx_cap, s->owner) < 0)
            s->owner = NIC_OWNER_UNKNOWN; /* its process is gone */
        if (s->owner == NIC_OWNER_UNKNOWN && s->inode)
            pending++;
    }
    bool any_new = false;
    for (size_t i = 0; i < p->nprocs; i++)
        any_new |= !p->procs[i].scanned && !p->procs[i].unreadable;
    /* new processes are read even when no socket is unowned: to learn
     * whether their fd folder is readable at all (an unreadable one must
     * not pass for "no traffic") and to fill their fd cache */
    if (!pending && !any_new)
        return 0;

    int err = index_alloc(&p->iidx, &p->iidx_cap, p->nsocks);
    if (err < 0)
        return err;
    size_t mask = p->iidx_cap - 1;
    for (size_t i = 0; i < p->nsocks; i++) {
        nic_sock *s = &p->socks[i];
        if (!s->inode)
            continue;
        size_t h = pa__hash_u64(s->inode) & mask;
        while (p->iidx[h] >= 0)
            h = (h + 1) & mask;
        p->iidx[h] = (int32_t)i;
    }

    for (size_t i = 0; i < p->nprocs; i++) {
        nic_proc *pr = &p->procs[i];
        if (pr->scanned || pr->unreadable)
            continue;
        int n = scan_fds(env, p, pr, tick, &pending);
        if (n == -EACCES || n == -EPERM) {
            pr->unreadable = true;
            note_fd_refused(m, p, pr, n);
        }
    }
    if (pending) {
        nic_proc **order = malloc(p->nprocs * sizeof *order);
        if (!order)
            return -ENOMEM;
        size_t n = 0;
        for (size_t i = 0; i < p->nprocs; i++)
            if (p->procs[i].scanned && !p->procs[i].unreadable)
                order[n++] = &p->procs[i];
        qsort(order, n, sizeof *order, cmp_recent);
        for (size_t i = 0; i < n && pending; i++)
            if (order[i]->scan_tick != tick) /* not just read */
                scan_fds(env, p, order[i], tick, &pending);
        free(order);
    }
    /* no watched process holds them: do not search again */
    for (size_t i = 0; i < p->nsocks; i++)
        if (p->socks[i].owner == NIC_OWNER_UNKNOWN)
            p->socks[i].owner = NIC_OWNER_FOREIGN;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Per tick                                                            */
/* ------------------------------------------------------------------ */

/* Rebuilds the process table from the context's processes seen this tick,
 * keeping the running totals of those already known (same start time). */
static int update_procs(const pa_frame *f, nic_priv *p)
{
    size_t n = 0, nall = pa_frame_task_count(f);
    pa_frame_task_info ti;
    for (size_t i = 0; i < nall; i++)
        n += pa_frame_task(f, i, &ti) == 0 && ti.type == PA_TARGET_PROCESS;
    if (PA__GROW(p->procs_new, p->procs_new_cap, n ? n : 1, 64) < 0)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < nall; i++) {
        if (pa_frame_task(f, i, &ti) < 0 || ti.type != PA_TARGET_PROCESS)
            continue;
        int32_t j = proc_find(p->procs, p->pidx, p->pidx_cap, ti.pid);
        nic_proc *pr = &p->procs_new[k++];
        if (j >= 0 && p->procs[j].start_ticks == ti.start_ticks) {
            *pr = p->procs[j];
            p->procs[j].fds = NULL; /* moved */
        } else {
            memset(pr, 0, sizeof *pr);
            pr->pid = ti.pid;
            pr->start_ticks = ti.start_ticks;
        }
    }
    for (size_t i = 0; i < p->nprocs; i++) {
        free(p->procs[i].fds); /* processes gone */
        p->procs[i].fds = NULL;
    }
    nic_proc *tmp = p->procs;
    size_t tcap = p->procs_cap;
    p->procs = p->procs_new;
    p->procs_cap = p->procs_new_cap;
    p->procs_new = tmp;
    p->procs_new_cap = tcap;
    p->nprocs = k;
    int err = index_alloc(&p->pidx, &p->pidx_cap, k);
    if (err < 0)
        return err;
    size_t mask = p->pidx_cap - 1;
    for (size_t i = 0; i < k; i++) {
        size_t h = pa__hash_u64((uint64_t)p->procs[i].pid) & mask;
        while (p->pidx[h] >= 0)
            h = (h + 1) & mask;
        p->pidx[h] = (int32_t)i;
    }
    return 0;
}

/* Rebuilds the socket table from this tick's dump. */
static int update_socks(const pa_env *env, nic_priv *p, uint64_t tick)
{
    if (PA__GROW(p->socks_new, p->socks_new_cap, p->nobs ? p->nobs : 1, 64) < 0)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < p->nobs; i++) {
        const nic_obs *o = &p->obs[i];
        int32_t j = sock_find(p, o->cookie);
        nic_sock *s = &p->socks_new[k];
        if (j >= 0) {
            *s = p->socks[j];
            if (o->inode && o->inode != s->inode) {
                s->inode = o->inode; /* cannot happen; be safe */
                s->owner = NIC_OWNER_UNKNOWN;
            }
        } else {
            /* a cookie seen twice in one dump (a socket moving between
             * hash chains during the dump) gets two records; the index
             * finds the first, so the second sighting adds nothing */
            s->cookie = o->cookie;
            s->inode = o->inode;
            s->owner = o->inode ? NIC_OWNER_UNKNOWN : NIC_OWNER_FOREIGN;
            s->kind = (uint8_t)classify(env, p, tick, o);
            /* first table: a baseline; later: opened in the window */
            s->rx = p->primed ? 0 : o->rx;
            s->tx = p->primed ? 0 : o->tx;
        }
        k++;
    }
    nic_sock *tmp = p->socks;
    size_t tcap = p->socks_cap;
    p->socks = p->socks_new;
    p->socks_cap = p->socks_new_cap;
    p->socks_new = tmp;
    p->socks_new_cap = tcap;
    p->nsocks = k;
    int err = index_alloc(&p->sidx, &p->sidx_cap, k);
    if (err < 0)
        return err;
    for (size_t i = 0; i < k; i++)
        sock_index_put(p->sidx, p->sidx_cap, p->socks[i].cookie, (int32_t)i);
    p->primed = true;
    return 0;
}

/* Adds each socket's bytes since its last sighting to its owner. */
static void account(nic_priv *p)
{
    for (size_t i = 0; i < p->nobs; i++) {
        const nic_obs *o = &p->obs[i];
        int32_t j = sock_find(p, o->cookie);
        if (j < 0)
            continue;
        nic_sock *s = &p->socks[j];
        uint64_t drx = o->rx >= s->rx ? o->rx - s->rx : 0;
        uint64_t dtx = o->tx >= s->tx ? o->tx - s->tx : 0;
        if (!drx && !dtx)
            continue;
        s->rx = o->rx;
        s->tx = o->tx;
        p->sock_bytes[s->kind] += drx + dtx;
        if (s->owner <= 0)
            continue;
        int32_t q = proc_find(p->procs, p->pidx, p->pidx_cap, s->owner);
        if (q < 0)
            continue;
        nic_proc *pr = &p->procs[q];
        pr->rx += drx;
        pr->tx += dtx;
        pr->kind_bytes[s->kind] += drx + dtx;
    }
}

static void degrade(pa_module *m, nic_priv *p, int err)
{
    if (p->nl >= 0)
        close(p->nl);
    p->nl = -1;
    p->mode = NIC_SD_OFF;
    if (p->degraded)
        return;
    p->degraded = true;
    pa_module_errorf(m,
                     "nic: netlink sock_diag unavailable (%s): interface "
                     "totals only, no per-process bytes; load the inet_diag "
                     "and tcp_diag modules, or use sockdiag=off to silence "
                     "this",
                     strerror(-err));
}

static int nic_sample(pa_module *m, pa_frame *frame)
{
    nic_priv *p = pa_module_priv(m);
    const pa_env *env = pa_module_env(m);

    int err = read_interfaces(env, p);
    if (err < 0)
        return pa_error_set(err, "nic: cannot read %s/class/net nor %s/net/dev: %s",
                            pa_env_sysfs(env), pa_env_procfs(env), strerror(-err));
    pa_frame_nic_set(frame, p->ifs, p->nifs);

    if (p->mode == NIC_SD_OFF && !p->sockfile[0])
        return 0;
    err = take_sockets(env, p);
    if (err == -EAGAIN)
        return 0; /* no process readings this tick; totals stay */
    if (err < 0) {
        if (p->sockfile[0])
            return err;
        if (p->mode == NIC_SD_ON)
            return pa_error_set(err, "nic: sock_diag dump failed: %s", strerror(-err));
        degrade(m, p, err);
        return 0;
    }
    uint64_t tick = pa_frame_tick(frame);
    if ((err = update_procs(frame, p)) < 0 || (err = update_socks(env, p, tick)) < 0 ||
        (err = resolve_owners(m, p, tick)) < 0)
        return pa_error_set(err, "nic: out of memory for %zu sockets", p->nobs);
    account(p);

    pa_frame_sock_bytes_set(frame, p->sock_bytes);
    pa_frame_task_info ti;
    for (size_t i = 0; i < pa_frame_task_count(frame); i++) {
        if (pa_frame_task(frame, i, &ti) < 0 || ti.type != PA_TARGET_PROCESS)
            continue;
        int32_t q = proc_find(p->procs, p->pidx, p->pidx_cap, ti.pid);
        if (q < 0 || p->procs[q].unreadable)
            continue;
        const nic_proc *pr = &p->procs[q];
        pa_frame_task_net(frame, i, pr->rx, pr->tx, pr->kind_bytes);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

static int nic_probe(const pa_env *env, char *why, size_t why_len)
{
    char path[NIC_PATH_MAX];
    struct stat st;
    if (pa_path_join(path, sizeof path, pa_env_sysfs(env), "class/net") == 0 &&
        stat(path, &st) == 0)
        return 0;
    if (pa_path_join(path, sizeof path, pa_env_procfs(env), "net/dev") == 0 &&
        access(path, R_OK) == 0)
        return 0;
    snprintf(why, why_len,
             "nic: neither %s/class/net nor %s/net/dev is readable (no "
             "network interfaces visible)",
             pa_env_sysfs(env), pa_env_procfs(env));
    return -ENODEV;
}

static int nic_apply(pa_module *m, nic_priv *p, const pa_options *opts)
{
    const char *v = pa_options_get(opts, "sockdiag");
    nic_mode mode = NIC_SD_AUTO;
    if (v && strcmp(v, "on") == 0)
        mode = NIC_SD_ON;
    else if (v && strcmp(v, "off") == 0)
        mode = NIC_SD_OFF;
    else if (v && strcmp(v, "auto") != 0)
        return pa_error_set(-EINVAL, "nic: sockdiag=%s: expected auto, on or off", v);
    const char *f = pa_options_get(opts, "sockfile");
    if (f && strlen(f) >= sizeof p->sockfile)
        return pa_error_set(-ENAMETOOLONG, "nic: sockfile path too long");

    if (p->nl >= 0) {
        close(p->nl);
        p->nl = -1;
    }
    p->mode = mode;
    p->degraded = false;
    snprintf(p->sockfile, sizeof p->sockfile, "%s", f ? f : "");
    if (mode == NIC_SD_OFF || p->sockfile[0])
        return 0;
    p->nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (p->nl < 0) {
        int err = -errno;
        if (mode == NIC_SD_ON)
            return pa_error_set(err,
                                "nic: cannot open a NETLINK_SOCK_DIAG socket: %s; "
                                "use sockdiag=auto or off",
                                strerror(errno));
        degrade(m, p, err);
    }
    return 0;
}

static void nic_free(nic_priv *p)
{
    if (!p)
        return;
    if (p->nl >= 0)
        close(p->nl);
    free(p->buf);
    free(p->obs);
    free(p->socks);
    free(p->socks_new);
    free(p->sidx);
    for (size_t i = 0; i < p->nprocs; i++)
        free(p->procs[i].fds);
    free(p->procs);
    free(p->procs_new);
    free(p->pidx);
    free(p->iidx);
    free(p->r4);
    free(p->r6);
    free(p->local);
    free(p);
}

static int nic_start(pa_module *m, const pa_options *opts)
{
    nic_priv *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->nl = -1;
    p->buf_len = 64 * 1024;
    p->buf = malloc(p->buf_len);
    if (!p->buf) {
        nic_free(p);
        return -ENOMEM;
    }
    int err = nic_apply(m, p, opts);
    if (err < 0) {
        nic_free(p);
        return err;
    }
    pa_module_set_priv(m, p);
    return 0;
}

static int nic_configure(pa_module *m, const pa_options *opts)
{
    nic_priv *p = pa_module_priv(m);
    char old_file[NIC_PATH_MAX];
    snprintf(old_file, sizeof old_file, "%s", p->sockfile);
    int err = nic_apply(m, p, opts);
    /* another socket source: the old per-socket values mean nothing */
    if (err == 0 && strcmp(old_file, p->sockfile) != 0) {
        p->nsocks = 0;
        p->sidx_cap = 0;
        free(p->sidx);
        p->sidx = NULL;
        p->primed = false;
    }
    return err;
}

static void nic_stop(pa_module *m)
{
    nic_free(pa_module_priv(m));
    pa_module_set_priv(m, NULL);
}

const pa_module_ops pa__mod_nic = {
    .abi = PA_MODULE_ABI,
    .name = "nic",
    .kind = PA_SENSOR,
    .component = PA_COMP_NONE,
    .description = "network interfaces (sysfs, /proc/net/dev) and per-process "
                   "TCP bytes (netlink sock_diag)",
    .options = nic_options,
    .probe = nic_probe,
    .start = nic_start,
    .sample = nic_sample,
    .configure = nic_configure,
    .stop = nic_stop,
};
