/*
 * sym.c - sampled addresses to named frames.
 *
 * A file-backed address is turned into the file's own virtual address
 * (file offset through the PT_LOAD headers), then looked up in that file
 * opened once with elfutils libdwfl at base 0: .symtab/.dynsym, the debug
 * file found by build-id or .gnu_debuglink under /usr/lib/debug
 * (dwfl_standard_find_debuginfo), DWARF lines and inlined subroutines
 * (dwarf_getscopes).  Addresses outside files: the process's perf map file
 * (/tmp/perf-PID.map, JIT code).  Kernel addresses: /proc/kallsyms.  An
 * address nothing names gets "[unknown] module+0xOFF", OFF the start of
 * its function from the unwind tables (.eh_frame) when they know it, else
 * the address itself: never a guessed name.
 *
 * C++ (_Z) and Rust names, legacy (_ZN...17h<hash>E) and v0 (_R), are
 * demangled with libiberty's cplus_demangle (Debian libiberty-dev, the
 * demangler of binutils and GDB): one C library for the three schemes,
 * where libstdc++'s __cxa_demangle knows only C++ and leaves v0 names as
 * they are.
 */
#include "perf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ------------------------------------------------------------------ */
/* Maps                                                                */
/* ------------------------------------------------------------------ */

static int map_cmp(const void *a, const void *b)
{
    const pf_map *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int pf_maps_add(pf_maps *m, uint64_t start, uint64_t len, uint64_t pgoff, const char *path)
{
    uint64_t end = start + len;
    /* cut what the new mapping overlaps */
    for (size_t i = 0; i < m->n; i++) {
        pf_map *o = &m->v[i];
        if (o->end <= start || o->start >= end)
            continue;
        if (o->start < start && o->end > end) {
            /* split: keep the head here, the tail appended */
            pf_map tail = *o;
            tail.pgoff += end - o->start;
            tail.start = end;
            o->end = start;
            if (PA__GROW(m->v, m->cap, m->n + 1, 64) < 0)
                return -ENOMEM;
            m->v[m->n++] = tail;
            continue;
        }
        if (o->start < start) {
            o->end = start;
        } else if (o->end > end) {
            o->pgoff += end - o->start;
            o->start = end;
        } else {
            o->start = o->end = 0; /* removed below */
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].end > m->v[i].start)
            m->v[k++] = m->v[i];
    m->n = k;
    if (PA__GROW(m->v, m->cap, m->n + 1, 64) < 0)
        return -ENOMEM;
    m->v[m->n++] = (pf_map){start, end, pgoff, pc_intern(path)};
    m->sorted = 0;
    m->version++;
    return 0;
}

const pf_map *pf_maps_find(pf_maps *m, uint64_t addr)
{
    if (m->n == 0)
        return NULL; /* a kernel thread, a process whose maps were not read */
    if (!m->sorted) {
        qsort(m->v, m->n, sizeof(*m->v), map_cmp);
        m->sorted = 1;
    }
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->v[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n && m->v[lo].start <= addr && addr < m->v[lo].end)
        return &m->v[lo];
    return NULL;
}

int pf_maps_read(pf_maps *m, const char *procfs, pid_t pid)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%d/maps", procfs, (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    char line[4600];
    int rc = 0;
    while (fgets(line, sizeof(line), f)) {
        /* proc(5) maps: address perms offset dev inode pathname */
        uint64_t a, b, off;
        char perms[8];
        int n = 0;
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &a, &b, perms, &off,
                   &n) < 4)
            continue;
        if (perms[2] != 'x')
            continue; /* only code is sampled */
        char *p = line + n;
        p[strcspn(p, "\n")] = '\0';
        if ((rc = pf_maps_add(m, a, b - a, off, p)) < 0)
            break;
    }
    fclose(f);
    return rc;
}

void pf_maps_free(pf_maps *m)
{
    free(m->v);
    memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------ */
/* Demangling                                                          */
/* ------------------------------------------------------------------ */

/* A demangled or plain name, interned.  A Rust legacy name loses its
 * "::h0123456789abcdef" hash (libiberty drops it unless DMGL_VERBOSE), a v0
 * name its crate disambiguators. */
static const char *nice_name(const char *raw)
{
    if (!raw || !*raw)
        return NULL;
    /* "memcpy@@GLIBC_2.14", "clock_nanosleep@GLIBC_2.2.5": the symbol
     * version is not part of the function's name */
    const char *at = strchr(raw, '@');
    char unversioned[512];
    if (at && at != raw && (size_t)(at - raw) < sizeof(unversioned)) {
        memcpy(unversioned, raw, (size_t)(at - raw));
        unversioned[at - raw] = '\0';
        raw = unversioned;
    }
    if (raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R')) {
        /* DMGL_AUTO: Rust first (legacy names are valid C++ names too),
         * then C++ */
        char *d = cplus_demangle(raw, DMGL_AUTO | DMGL_PARAMS | DMGL_ANSI);
        if (d) {
            const char *r = pc_intern(d);
            free(d);
            return r;
        }
    }
    return pc_intern(raw);
}

/* ------------------------------------------------------------------ */
/* ELF modules                                                         */
/* ------------------------------------------------------------------ */

typedef struct seg {
    uint64_t off, filesz, vaddr;
} seg;

typedef struct module {
    const char *path; /* interned; the key */
    const char *base; /* interned basename */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_CFI *cfi;       /* .eh_frame of the file, or NULL */
    const char *build_id; /* interned hex, "" unknown */
    seg *segs;
    size_t nsegs;
    int has_dwarf;
    uint64_t entry; /* e_entry (the program's or the loader's _start), 0 */
    /* .eh_frame_hdr's sorted table of FDE starts (pairs of int32 from
     * hdr_vaddr), to give an unnamed function its start */
    const unsigned char *fde_tab;
    size_t nfde;
    uint64_t hdr_vaddr;
    /* the file's function symbols sorted by address, read once on the
     * first lookup (msyms_load): dwfl_module_addrinfo scans every symbol
     * of the file on each call, which made naming the addresses of a
     * whole machine's processes (profile --all) most of its cost */
    struct msym *syms;
    size_t nsyms;
    int syms_loaded;
    /* what module_frames gave each address, for every process of the
     * file (a compiler run a thousand times is named once): open
     * addressing over vaddr, the frames in fpool */
    struct mres *res;
    size_t rescap, resn;
} module;

typedef struct mres {
    uint64_t vaddr;
    uint32_t at; /* in fpool */
    int n;       /* frames; 0: the slot is free, -1: none */
} mres;

static pf_frame *fpool;
static size_t nfpool, capfpool;

typedef struct msym {
    uint64_t start, size;
    const char *name; /* the ELF's string table, alive with the Dwfl */
    int rank;         /* sized first, then GLOBAL, WEAK, LOCAL */
} msym;

static module *mods;
static size_t nmods, capmods;

static char *debuginfo_path = NULL;
static const Dwfl_Callbacks offline_cb = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

static const char *basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The table of .eh_frame_hdr (PT_GNU_EH_FRAME): version 1, the usual
 * encodings (eh_frame_ptr 4 bytes, fde_count udata4, table datarel
 * sdata4, as GNU ld writes them); none otherwise. */
static void fde_table(module *m, Elf *elf, size_t nph, GElf_Addr bias)
{
    size_t size = 0;
    const unsigned char *raw = (const unsigned char *)elf_rawfile(elf, &size);
    for (size_t i = 0; raw && i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
            continue;
        /* a file's word, not trusted: every offset checked against size */
        if (ph.p_offset > size || size - ph.p_offset < 12 || ph.p_filesz < 12)
            return;
        const unsigned char *h = raw + ph.p_offset;
        if (h[0] != 1 || (h[1] & 0x0f) % 8 != 3 || h[2] != 0x03 || h[3] != 0x3b)
            return;
        uint32_t n;
        memcpy(&n, h + 8, 4);
        if ((uint64_t)n > (size - ph.p_offset - 12) / 8)
            return;
        m->fde_tab = h + 12;
        m->nfde = n;
        m->hdr_vaddr = ph.p_vaddr + bias;
        return;
    }
}

/* The start of the FDE that holds vaddr (the last one starting at or
 * before it: FDEs do not overlap), or vaddr when there is no table. */
static uint64_t fde_start(const module *m, uint64_t vaddr)
{
    size_t lo = 0, hi = m->nfde;
    uint64_t best = vaddr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int32_t rel;
        memcpy(&rel, m->fde_tab + mid * 8, 4);
        uint64_t start = m->hdr_vaddr + (uint64_t)(int64_t)rel;
        if (start <= vaddr) {
            best = start;
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return best;
}

const char *pf_vdso_file(void)
{
    static char path[64];
    static int made;
    if (made)
        return path;
    made = 1;
    const unsigned char *img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!img)
        return path;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return path;
    /* the image ends with its section headers, or its last segment */
    size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_offset + ph[i].p_filesz > size)
            size = ph[i].p_offset + ph[i].p_filesz;
    if (size > (1u << 20))
        return path;
    int fd = memfd_create("powerapi-vdso", MFD_CLOEXEC);
    if (fd < 0)
        return path;
    if (write(fd, img, size) != (ssize_t)size) {
        close(fd);
        return path;
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return path;
}

/* The file of a mapping's code: its path when it is a file, the vDSO's
 * image for [vdso], else NULL (anonymous memory, "//anon"). */
static const char *map_file(const pf_map *mp)
{
    if (mp->path[0] == '/' && mp->path[1] != '/')
        return mp->path;
    if (!strcmp(mp->path, "[vdso]") && *pf_vdso_file())
        return mp->path;
    return NULL;
}

static module *module_get(const char *path)
{
    for (size_t i = 0; i < nmods; i++)
        if (mods[i].path == path)
            return &mods[i];
    if (PA__GROW(mods, capmods, nmods + 1, 32) < 0)
        return NULL;
    module *m = &mods[nmods++];
    memset(m, 0, sizeof(*m));
    m->path = path;
    /* " (deleted)": the file was replaced; nothing to open */
    m->base = pc_intern(basename_of(path));
    m->build_id = pc_intern("");
    m->dwfl = dwfl_begin(&offline_cb);
    if (!m->dwfl)
        return m;
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_elf(m->dwfl, m->base, strcmp(path, "[vdso]") ? path : pf_vdso_file(), -1,
                             0, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod)
        return m;
    const unsigned char *bits;
    GElf_Addr bid_vaddr;
    int nbits = dwfl_module_build_id(m->mod, &bits, &bid_vaddr);
    if (nbits > 0 && nbits <= 64) {
        char hex[129];
        for (int i = 0; i < nbits; i++)
            snprintf(hex + 2 * i, 3, "%02x", bits[i]);
        m->build_id = pc_intern(hex);
    }
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(m->mod, &bias);
    size_t nph = 0;
    if (elf && elf_getphdrnum(elf, &nph) == 0 && nph) {
        m->segs = calloc(nph, sizeof(*m->segs));
        for (size_t i = 0; m->segs && i < nph; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
                m->segs[m->nsegs++] = (seg){ph.p_offset, ph.p_filesz, ph.p_vaddr + bias};
        }
        m->cfi = dwarf_getcfi_elf(elf);
        fde_table(m, elf, nph, bias);
        GElf_Ehdr eh;
        if (gelf_getehdr(elf, &eh))
            m->entry = eh.e_entry ? eh.e_entry + bias : 0;
    }
    Dwarf_Addr dbias;
    m->has_dwarf = dwfl_module_getdwarf(m->mod, &dbias) != NULL;
    return m;
}

/* The file's virtual address of a file offset, or 0 when no segment
 * holds it. */
static int module_vaddr(const module *m, uint64_t off, uint64_t *out)
{
    for (size_t i = 0; i < m->nsegs; i++) {
        const seg *s = &m->segs[i];
        if (off >= s->off && off < s->off + s->filesz + 4096) {
            *out = off - s->off + s->vaddr;
            return 0;
        }
    }
    return -ENOENT;
}

/* Name of a DIE (subprogram or inlined), following abstract origins. */
static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *s = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
        s = dwarf_formstring(&a);
    if (!s && dwarf_attr_integrate(die, DW_AT_name, &a))
        s = dwarf_formstring(&a);
    return s;
}

static void decl_of(Dwarf_Die *die, pf_frame *f)
{
    Dwarf_Attribute a;
    Dwarf_Die origin, *d = die;
    /* an inlined instance declares nothing itself: its abstract origin */
    if (dwarf_attr(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
        d = &origin;
    const char *file = dwarf_decl_file(d);
    int line = 0;
    dwarf_decl_line(d, &line);
    if (file) {
        char buf[512];
        snprintf(buf, sizeof(buf), "%s:%d", basename_of(file), line);
        f->source = pc_intern(buf);
        f->file = pc_intern(file);
        f->line = line;
    }
}

/* Frames from DWARF: innermost inlined function first, then its callers
 * up to the real (out-of-line) function.  Returns the count, 0 if DWARF
 * does not cover addr. */
static int dwarf_frames(module *m, uint64_t addr, pf_frame *out, int max)
{
    if (!m->has_dwarf)
        return 0;
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, addr, &bias);
    if (!cu)
        return 0;
    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cu, addr - bias, &scopes);
    int n = 0;
    /* the line at addr belongs to the innermost function; each inlined
     * instance says where its caller called it */
    int at_line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(m->mod, addr);
    if (dl)
        dwfl_lineinfo(dl, NULL, &at_line, NULL, NULL, NULL);
    for (int i = 0; i < ns && n < max; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        const char *name = die_name(&scopes[i]);
        if (name) {
            pf_frame f = {.name = nice_name(name),
                          .module = m->base,
                          .source = "",
                          .file = "",
                          .at_line = at_line};
            decl_of(&scopes[i], &f);
            out[n++] = f;
        }
        if (tag == DW_TAG_subprogram)
            break;
        Dwarf_Attribute a;
        Dwarf_Word call_line = 0;
        if (dwarf_attr(&scopes[i], DW_AT_call_line, &a) && dwarf_formudata(&a, &call_line) == 0 &&
            call_line <= INT_MAX)
            at_line = (int)call_line;
        else
            at_line = 0;
        /* after an inlined instance dwarf_getscopes lists the abstract
         * definition's scopes; the function it was inlined into is among
         * the scopes that contain the instance itself */
        Dwarf_Die *outer = NULL;
        int no = dwarf_getscopes_die(&scopes[i], &outer);
        if (no <= 0) {
            free(outer);
            break;
        }
        free(scopes);
        scopes = outer;
        ns = no;
        i = 0; /* outer[0] is the instance itself */
    }
    free(scopes);
    return n;
}

static int msym_cmp(const void *a, const void *b)
{
    const msym *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return y->rank - x->rank; /* the best of a start first */
}

static int sym_rank(const GElf_Sym *sym)
{
    int bind = GELF_ST_BIND(sym->st_info);
    return (sym->st_size ? 4 : 0) + (bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0);
}

/* Every named function (or untyped code) symbol of .symtab/.dynsym (and
 * the debug file's), sorted by address, one per address: the best. */
static void msyms_load(module *m)
{
    m->syms_loaded = 1;
    int n = m->mod ? dwfl_module_getsymtab(m->mod) : -1;
    if (n <= 1 || !(m->syms = calloc((size_t)n, sizeof(*m->syms))))
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        if (!name || !*name || shndx == SHN_UNDEF || !addr ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        m->syms[m->nsyms++] = (msym){addr, sym.st_size, name, sym_rank(&sym)};
    }
    if (m->nsyms > 1)
        qsort(m->syms, m->nsyms, sizeof(*m->syms), msym_cmp);
    size_t k = 0;
    for (size_t i = 0; i < m->nsyms; i++)
        if (!k || m->syms[i].start != m->syms[k - 1].start)
            m->syms[k++] = m->syms[i];
    m->nsyms = k;
}

/* The symbol at vaddr: the nearest one at or below it that contains it
 * (sized), or starts exactly there; a sized symbol a few entries back
 * that encloses a smaller one is found too.  NULL: none. */
static const char *msym_find(module *m, uint64_t vaddr)
{
    if (!m->syms_loaded)
        msyms_load(m);
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].start <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo, back = 0; i > 0 && back < 8; i--, back++) {
        const msym *s = &m->syms[i - 1];
        if (vaddr == s->start || vaddr - s->start < s->size)
            return s->name;
    }
    return NULL;
}

static int module_frames_uncached(module *m, uint64_t vaddr, pf_frame *out, int max);

/* module_frames_uncached through the module's table of answers. */
static int module_frames(module *m, uint64_t vaddr, pf_frame *out, int max)
{
    if ((m->resn + 1) * 2 > m->rescap) {
        size_t ncap = m->rescap ? m->rescap * 2 : 256;
        mres *nv = calloc(ncap, sizeof(*nv));
        if (!nv)
            return module_frames_uncached(m, vaddr, out, max);
        for (size_t i = 0; i < m->rescap; i++) {
            if (!m->res[i].n)
                continue;
            size_t q = pa__hash_pair(m->res[i].vaddr, 0) & (ncap - 1);
            while (nv[q].n)
                q = (q + 1) & (ncap - 1);
            nv[q] = m->res[i];
        }
        free(m->res);
        m->res = nv;
        m->rescap = ncap;
    }
    size_t q = pa__hash_pair(vaddr, 0) & (m->rescap - 1);
    for (; m->res[q].n; q = (q + 1) & (m->rescap - 1)) {
        if (m->res[q].vaddr != vaddr)
            continue;
        int n = m->res[q].n < 0 ? 0 : m->res[q].n < max ? m->res[q].n : max;
        memcpy(out, &fpool[m->res[q].at], (size_t)n * sizeof(*out));
        return n;
    }
    int n = module_frames_uncached(m, vaddr, out, max);
    if (n > 0 && PA__GROW(fpool, capfpool, nfpool + (size_t)n, 4096) < 0)
        return n;
    if (n > 0)
        memcpy(&fpool[nfpool], out, (size_t)n * sizeof(*out));
    m->res[q] = (mres){vaddr, (uint32_t)nfpool, n > 0 ? n : -1};
    nfpool += n > 0 ? (size_t)n : 0;
    m->resn++;
    return n;
}

static int module_frames_uncached(module *m, uint64_t vaddr, pf_frame *out, int max)
{
    int n = dwarf_frames(m, vaddr, out, max);
    if (n > 0) {
        /* DWARF's outermost name is the symbol's when both exist (a
         * subprogram DIE may lack a linkage name; the symbol has it) */
        const char *s = msym_find(m, vaddr);
        if (s)
            out[n - 1].name = nice_name(s);
        for (int i = 0; i + 1 < n; i++)
            out[i].inlined = 1;
        return n;
    }
    if (m->mod) {
        /* a symbol without size may be a wrong neighbour: only sized
         * symbols that contain the address, or exact hits */
        const char *s = msym_find(m, vaddr);
        if (s) {
            out[0] = (pf_frame){.name = nice_name(s), .module = m->base, .source = "", .file = ""};
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Perf maps (JIT) and kallsyms                                        */
/* ------------------------------------------------------------------ */

typedef struct psym {
    uint64_t start, end;
    const char *name;
} psym;

typedef struct perfmap {
    pid_t pid;
    psym *v;
    size_t n;
    int loaded;
    off_t size;           /* of the file when read */
    int jvm;              /* 1: maps libjvm.so, -1: does not, 0: unknown */
    uint64_t jit_unnamed; /* frames in anonymous code no map named */
    /* those frames' addresses and names, to name them at the end when a
     * map appears then (-XX:+DumpPerfMapAtExit writes it at exit) */
    struct {
        uint64_t addr;
        const char *name, *module;
    } * late;
    size_t nlate, caplate;
} perfmap;

static perfmap *pmaps;
static size_t npmaps;

static int psym_cmp(const void *a, const void *b)
{
    const psym *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const psym *psym_find(const psym *v, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const psym *s = &v[lo - 1];
    return addr < s->end ? s : NULL;
}

static perfmap *perfmap_get(pid_t pid)
{
    for (size_t i = 0; i < npmaps; i++)
        if (pmaps[i].pid == pid)
            return &pmaps[i];
    perfmap *nv = realloc(pmaps, (npmaps + 1) * sizeof(*nv));
    if (!nv)
        return NULL;
    pmaps = nv;
    perfmap *pm = &pmaps[npmaps++];
    memset(pm, 0, sizeof(*pm));
    pm->pid = pid;
    return pm;
}

/* (Re)reads /tmp/perf-PID.map: "START SIZE name" in hex, one a line, as
 * node --perf-basic-prof, perf-map-agent and python -X perf write it. */
static void perfmap_load(perfmap *pm)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pm->pid);
    struct stat st;
    if (pm->loaded && (stat(path, &st) < 0 || st.st_size == pm->size))
        return; /* unchanged since the last read */
    FILE *f = fopen(path, "re");
    pm->loaded = 1;
    if (!f)
        return;
    if (fstat(fileno(f), &st) == 0)
        pm->size = st.st_size;
    free(pm->v);
    pm->v = NULL;
    pm->n = 0;
    size_t cap = 0;
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        uint64_t a, len;
        int n = 0;
        if (sscanf(line, "%" SCNx64 " %" SCNx64 " %n", &a, &len, &n) < 2 || !n)
            continue;
        char *name = line + n;
        name[strcspn(name, "\n")] = '\0';
        if (!*name || !len)
            continue;
        if (PA__GROW(pm->v, cap, pm->n + 1, 256) < 0)
            break;
        pm->v[pm->n++] = (psym){a, a + len, pc_intern(name)};
    }
    fclose(f);
    if (pm->n)
        qsort(pm->v, pm->n, sizeof(*pm->v), psym_cmp);
}

static psym *ksyms;
static size_t nksyms;
static char *kbuf; /* /proc/kallsyms, names terminated in place */
static const char *kstate = "not requested";
static const char *k_module;
static int kwanted, kloaded;
static char kpath[4096];

/* Read at the first kernel address (a profile of user code alone never
 * pays for it), parsed by hand: the file has ~200,000 lines. */
static void kallsyms_load(void)
{
    kloaded = 1;
    FILE *f = fopen(kpath, "re");
    if (!f) {
        kstate = "dropped: /proc/kallsyms not readable";
        return;
    }
    size_t cap = 1 << 22, len = 0;
    kbuf = malloc(cap + 1);
    while (kbuf) {
        size_t r = fread(kbuf + len, 1, cap - len, f);
        len += r;
        if (len < cap)
            break;
        char *nb = realloc(kbuf, cap * 2 + 1);
        if (!nb) {
            free(kbuf);
            kbuf = NULL;
            break;
        }
        kbuf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!kbuf)
        return;
    kbuf[len] = '\0';
    size_t scap = 0;
    int zero = 1, sorted = 1;
    /* proc's kallsyms: "ffffffff81000000 T _stext\t[module]" */
    for (char *p = kbuf; *p;) {
        char *eol = strchr(p, '\n');
        if (eol)
            *eol = '\0';
        uint64_t a = 0;
        int h;
        while ((h = pa__hexval((unsigned char)*p)) >= 0) {
            a = a << 4 | (uint64_t)h;
            p++;
        }
        if (*p == ' ' && (p[1] == 't' || p[1] == 'T' || p[1] == 'w' || p[1] == 'W') &&
            p[2] == ' ') {
            char *name = p + 3;
            name[strcspn(name, " \t")] = '\0';
            if (PA__GROW(ksyms, scap, nksyms + 1, 65536) < 0)
                break;
            if (a)
                zero = 0;
            if (nksyms && a < ksyms[nksyms - 1].start)
                sorted = 0;
            ksyms[nksyms++] = (psym){a, 0, name};
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    if (zero) {
        free(ksyms);
        ksyms = NULL;
        nksyms = 0;
        kstate = "dropped: kernel addresses hidden (kptr_restrict)";
        return;
    }
    if (!sorted)
        qsort(ksyms, nksyms, sizeof(*ksyms), psym_cmp);
    /* each symbol ends where the next begins */
    for (size_t i = 0; i < nksyms; i++)
        ksyms[i].end = i + 1 < nksyms ? ksyms[i + 1].start : ksyms[i].start + 4096;
    kstate = "named from /proc/kallsyms";
}

int pf_sym_kernel_dropped(uint64_t addr)
{
    if (addr < 0xffff800000000000ull)
        return 0;
    if (kwanted && !kloaded)
        kallsyms_load();
    return ksyms == NULL;
}

const char *pf_sym_kernel_state(void)
{
    return kstate;
}

/* ------------------------------------------------------------------ */

int pf_sym_init(const char *procfs, int kernel)
{
    elf_version(EV_CURRENT);
    k_module = pc_intern("[kernel]");
    snprintf(kpath, sizeof(kpath), "%s/kallsyms", procfs);
    kwanted = kernel;
    kloaded = 0;
    if (kernel)
        kstate = "no kernel sample";
    else
        kstate = "dropped: kernel samples not allowed (perf_event_paranoid; "
                 "run as root or with CAP_PERFMON)";
    return 0;
}

void pf_sym_fini(void)
{
    for (size_t i = 0; i < nmods; i++) {
        if (mods[i].cfi)
            dwarf_cfi_end(mods[i].cfi);
        if (mods[i].dwfl)
            dwfl_end(mods[i].dwfl);
        free(mods[i].segs);
        free(mods[i].syms);
        free(mods[i].res);
    }
    free(mods);
    free(fpool);
    fpool = NULL;
    nfpool = capfpool = 0;
    mods = NULL;
    nmods = capmods = 0;
    for (size_t i = 0; i < npmaps; i++) {
        free(pmaps[i].v);
        free(pmaps[i].late);
    }
    free(pmaps);
    pmaps = NULL;
    npmaps = 0;
    free(ksyms);
    ksyms = NULL;
    nksyms = 0;
    free(kbuf);
    kbuf = NULL;
}

size_t pf_sym_memory(void)
{
    size_t b = pc_intern_memory();
    b += capmods * sizeof(module) + nksyms * sizeof(psym);
    for (size_t i = 0; i < nmods; i++)
        b += mods[i].nsyms * sizeof(msym) + mods[i].rescap * sizeof(mres);
    b += capfpool * sizeof(pf_frame);
    if (kbuf)
        b += strlen(kbuf) + 1;
    for (size_t i = 0; i < npmaps; i++)
        b += pmaps[i].n * sizeof(psym);
    return b;
}

static pf_frame unknown_frame(const char *modname, uint64_t off)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "[unknown] %s+0x%" PRIx64, modname, off);
    return (pf_frame){.name = pc_intern(buf),
                      .module = pc_intern(modname),
                      .source = pc_intern(""),
                      .file = pc_intern("")};
}

/* Kernel address addr (a, the one looked up) as one frame of kallsyms'
 * names. */
static pf_frame kernel_frame(uint64_t addr, uint64_t a)
{
    if (kwanted && !kloaded)
        kallsyms_load();
    const psym *s = ksyms ? psym_find(ksyms, nksyms, a) : NULL;
    char buf[300];
    if (s)
        snprintf(buf, sizeof(buf), "%s [k]", s->name);
    else
        snprintf(buf, sizeof(buf), "[unknown] [kernel]+0x%" PRIx64 " [k]", addr);
    return (pf_frame){
        .name = pc_intern(buf), .module = k_module, .source = pc_intern(""), .file = pc_intern("")};
}

/* Address a inside the file mapped at mp: its frames (inlined ones
 * first) from the module's symbols and debug information, or one frame
 * named from the unwind tables; 0 when the module cannot be read. */
static int module_resolve(const pf_map *mp, uint64_t a, pf_frame *out, int max)
{
    module *m = module_get(mp->path);
    uint64_t vaddr;
    if (!m || !m->mod || module_vaddr(m, a - mp->start + mp->pgoff, &vaddr) != 0)
        return 0;
    int n = module_frames(m, vaddr, out, max);
    if (n > 0) {
        for (int i = 0; i < n; i++) {
            if (!out[i].source)
                out[i].source = pc_intern("");
            if (!out[i].file)
                out[i].file = pc_intern("");
        }
        return n;
    }
    /* unnamed: the function's start from the unwind tables (its FDE's:
     * dwarf_frame_info gives the row's, which would split a function into
     * several names) */
    uint64_t start = vaddr;
    Dwarf_Frame *fr = NULL;
    bool fde = false;
    if (m->cfi && dwarf_cfi_addrframe(m->cfi, vaddr, &fr) == 0) {
        Dwarf_Addr s, e;
        bool sig;
        if (dwarf_frame_info(fr, &s, &e, &sig) >= 0) {
            start = m->nfde ? fde_start(m, vaddr) : s;
            fde = true;
        }
        free(fr);
    }
    /* the ELF's entry point is _start (the name the linker gives it), also
     * in the loader, whose entry code has no FDE: from the entry to its
     * jump to the program (_dl_start_user), 64 bytes on x86-64 */
    if (m->entry && (fde ? start == m->entry : vaddr - m->entry < 64)) {
        out[0] =
            (pf_frame){.name = pc_intern("_start"), .module = m->base, .source = "", .file = ""};
        return 1;
    }
    out[0] = unknown_frame(m->base, start);
    return 1;
}

static int resolve_frames(pid_t pid, pf_maps *maps, uint64_t addr, int is_return, pf_frame *out,
                          int max)
{
    uint64_t a = is_return && addr ? addr - 1 : addr;
    if (max < 1)
        return 0;
    if (addr >= 0xffff800000000000ull) {
        out[0] = kernel_frame(addr, a);
        return 1;
    }
    const pf_map *mp = maps ? pf_maps_find(maps, a) : NULL;
    /* "//anon" (MMAP2's name of anonymous executable memory), files that
     * cannot be opened: the perf map, else [unknown] */
    if (mp && map_file(mp)) {
        int n = module_resolve(mp, a, out, max);
        if (n > 0)
            return n;
    }
    /* JIT code: anonymous memory described by a perf map */
    perfmap *pm = perfmap_get(pid);
    if (pm) {
        if (!pm->loaded)
            perfmap_load(pm);
        const psym *s = psym_find(pm->v, pm->n, a);
        if (!s) {
            /* written since the last read: read it again, once per miss
             * of a new region is enough for JITs that append */
            perfmap_load(pm);
            s = psym_find(pm->v, pm->n, a);
        }
        if (s) {
            out[0] = (pf_frame){.name = s->name,
                                .module = pc_intern("[jit]"),
                                .source = pc_intern(""),
                                .file = pc_intern("")};
            return 1;
        }
    }
    if (pm && mp && !map_file(mp)) {
        pm->jit_unnamed++; /* anonymous code no perf map names */
        if (!pm->jvm && maps) {
            pm->jvm = -1;
            for (size_t i = 0; i < maps->n; i++)
                if (strstr(maps->v[i].path, "/libjvm.so"))
                    pm->jvm = 1;
        }
    }
    if (mp && map_file(mp))
        out[0] = unknown_frame(basename_of(mp->path), a - mp->start + mp->pgoff);
    else if (mp) {
        out[0] =
            unknown_frame(mp->path[0] && mp->path[1] != '/' ? mp->path : "[anon]", a - mp->start);
        if (pm && PA__GROW(pm->late, pm->caplate, pm->nlate + 1, 64) == 0) {
            pm->late[pm->nlate].addr = a;
            pm->late[pm->nlate].name = out[0].name;
            pm->late[pm->nlate++].module = out[0].module;
        }
    } else
        out[0] = unknown_frame("[unmapped]", a);
    return 1;
}

int pf_sym_resolve(pid_t pid, pf_maps *maps, uint64_t addr, int is_return, pf_frame *out, int max)
{
    int n = resolve_frames(pid, maps, addr, is_return, out, max);
    /* the mapping each frame comes from, for pprof */
    const char *path = pc_intern(""), *bid = path;
    uint64_t start = 0, limit = 0, off = 0;
    if (n > 0 && out[0].module == k_module) {
        path = pc_intern("[kernel.kallsyms]");
    } else if (n > 0) {
        uint64_t a = is_return && addr ? addr - 1 : addr;
        const pf_map *mp = maps ? pf_maps_find(maps, a) : NULL;
        if (mp) {
            path = mp->path[0] ? mp->path : pc_intern("[anon]");
            start = mp->start;
            limit = mp->end;
            off = mp->pgoff;
            if (map_file(mp)) {
                module *m = module_get(mp->path);
                if (m && m->build_id)
                    bid = m->build_id;
            }
        } else if (!strcmp(out[0].module, "[jit]")) {
            path = out[0].module;
        }
    }
    for (int i = 0; i < n; i++) {
        out[i].path = path;
        out[i].build_id = bid;
        out[i].mstart = start;
        out[i].mlimit = limit;
        out[i].moff = off;
    }
    return n;
}

size_t pf_sym_unnamed_jvms(pid_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < npmaps && n < max; i++) {
        perfmap *pm = &pmaps[i];
        if (pm->jvm != 1 || !pm->jit_unnamed)
            continue;
        perfmap_load(pm); /* written at exit (DumpPerfMapAtExit): read again */
        if (!pm->n)
            out[n++] = pm->pid;
    }
    return n;
}

size_t pf_sym_late_jit(void (*fn)(void *user, const char *name, const char *module,
                                  const pf_frame *now),
                       void *user)
{
    size_t named = 0;
    for (size_t i = 0; i < npmaps; i++) {
        perfmap *pm = &pmaps[i];
        if (!pm->nlate)
            continue;
        perfmap_load(pm);
        for (size_t k = 0; k < pm->nlate && pm->n; k++) {
            const psym *s = psym_find(pm->v, pm->n, pm->late[k].addr);
            if (!s)
                continue;
            pf_frame f = {.name = s->name,
                          .module = pc_intern("[jit]"),
                          .source = pc_intern(""),
                          .file = pc_intern(""),
                          .path = pc_intern("[jit]"),
                          .build_id = pc_intern("")};
            fn(user, pm->late[k].name, pm->late[k].module, &f);
            named++;
        }
        pm->nlate = 0;
    }
    return named;
}
