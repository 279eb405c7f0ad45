/*
 * unwind.c - --call-graph dwarf: user stacks unwound from a copy.
 *
 * With PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER each sample brings
 * the user registers and the top of the user stack (8 KiB), as with `perf
 * record --call-graph dwarf`; they are unwound here with libdwfl's
 * unwinder (dwfl_attach_state + dwfl_getthread_frames) through the CFI
 * (.eh_frame, .debug_frame) of the modules of the process, so that frames
 * through code built without frame pointers (Debian's libc, -O2 builds)
 * are right.
 *
 * One Dwfl per process generation (rebuilt when its maps change), its
 * modules reported at their load bias (map start - file offset, as perf
 * does); the registers and stack of the sample being unwound are handed to
 * the callbacks through the unwinder's state.  x86-64 only.
 *
 * The kernel copies the stack in the sampling interrupt, where it cannot
 * fault a page in: the copy stops at the first page of the stack that is
 * not in memory, and the callers above it are lost (perf record has the
 * same limit).  Such pages are stack the thread reserved and never
 * touched (GNU sort's comparison function reserves 8.6 KiB of buffer and
 * mostly leaves it alone), so they would read as zeros.  The profiler
 * reads one byte of each (process_vm_readv): the kernel maps its shared
 * zero page there, nothing is written, the target reads the same zeros,
 * its RSS does not change, and later copies pass.  Done for a new
 * program's stack when its exec is seen, and for the pages a walk wanted
 * past a short copy.
 */
#include "perf.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct pf_unwinder {
    Dwfl *dwfl;
    unsigned version; /* of the maps it was built from */
    bool attached;
    /* the sample being unwound */
    pid_t tid;
    Dwarf_Word dregs[17]; /* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp
                             r8..r15 rip */
    const char *stack;
    uint64_t stack_lo;
    size_t stack_len;
    uint64_t *pcs;
    int npcs, max;
    uint64_t beyond; /* the first address read past the copy, 0 none */
};

static char *debuginfo_path;
static const Dwfl_Callbacks cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

static pid_t uw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    if (*thread_argp)
        return 0;
    *thread_argp = arg;
    return ((pf_unwinder *)arg)->tid;
}

static bool uw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl;
    (void)tid;
    *thread_argp = arg;
    return true;
}

static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    pf_unwinder *u = arg;
    if (addr < u->stack_lo || addr + sizeof(*result) > u->stack_lo + u->stack_len) {
        if (addr >= u->stack_lo && !u->beyond)
            u->beyond = addr + sizeof(*result);
        return false; /* beyond the copy: the unwind ends there */
    }
    memcpy(result, u->stack + (addr - u->stack_lo), sizeof(*result));
    return true;
}

static bool uw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    pf_unwinder *u = arg;
    return dwfl_thread_state_registers(thread, 0, 17, u->dregs);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = uw_next_thread,
    .get_thread = uw_get_thread,
    .memory_read = uw_memory_read,
    .set_initial_registers = uw_set_initial_registers,
};

static int build(pf_unwinder *u, pid_t pid, pf_maps *maps)
{
    if (u->dwfl)
        dwfl_end(u->dwfl);
    u->attached = false;
    u->dwfl = dwfl_begin(&cbs);
    if (!u->dwfl)
        return -ENOMEM;
    dwfl_report_begin(u->dwfl);
    for (size_t i = 0; i < maps->n; i++) {
        const pf_map *m = &maps->v[i];
        /* files, and the vDSO (its image: the same in every process) */
        const char *file = m->path;
        if (!strcmp(m->path, "[vdso]"))
            file = pf_vdso_file();
        else if (m->path[0] != '/' || m->path[1] == '/')
            continue;
        if (!*file)
            continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = maps->v[k].path == m->path;
        if (seen)
            continue;
        const char *base = strrchr(m->path, '/');
        dwfl_report_elf(u->dwfl, base ? base + 1 : m->path, file, -1, m->start - m->pgoff, false);
    }
    dwfl_report_end(u->dwfl, NULL, NULL);
    u->version = maps->version;
    if (!dwfl_attach_state(u->dwfl, NULL, pid, &thread_cbs, u))
        return -ENOENT;
    u->attached = true;
    return 0;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
    pf_unwinder *u = arg;
    Dwarf_Addr pc;
    bool act;
    if (!dwfl_frame_pc(state, &pc, &act) || pc == 0)
        return DWARF_CB_ABORT;
    u->pcs[u->npcs++] = pc;
    return u->npcs < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int pf_unwind(pf_unwinder **cache, pid_t pid, pid_t tid, pf_maps *maps, const uint64_t *perf_regs,
              const char *stack, size_t stack_len, uint64_t *pcs, int max, uint64_t *beyond)
{
    *beyond = 0;
    pf_unwinder *u = *cache;
    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u)
            return -ENOMEM;
        *cache = u;
    }
    if (!u->dwfl || u->version != maps->version) {
        int rc = build(u, pid, maps);
        if (rc < 0)
            return rc;
    }
    if (!u->attached)
        return -ENOENT;
    /* perf_regs: AX BX CX DX SI DI BP SP IP R8..R15 (PF_UNWIND_REGS_MASK
     * order) */
    static const int to_dwarf[17] = {0, 3, 2, 1, 4, 5, 6, 7, 16, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int i = 0; i < 17; i++)
        u->dregs[to_dwarf[i]] = perf_regs[i];
    u->tid = tid;
    u->stack = stack;
    u->stack_lo = perf_regs[7]; /* SP: the copy starts there */
    u->stack_len = stack_len;
    u->pcs = pcs;
    u->npcs = 0;
    u->max = max;
    u->beyond = 0;
    dwfl_getthread_frames(u->dwfl, tid, on_frame, u);
    *beyond = u->beyond;
    /* an error ends the walk where it happened: the frames so far stand */
    return u->npcs;
}

void pf_unwinder_free(pf_unwinder *u)
{
    if (!u)
        return;
    if (u->dwfl)
        dwfl_end(u->dwfl);
    free(u);
}

int pf_unwind_fault_in(pid_t tid, uint64_t lo, uint64_t hi)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        pg = 4096;
    uint64_t a = lo & ~((uint64_t)pg - 1);
    while (a < hi) {
        char buf[64];
        struct iovec loc[64], rem[64];
        unsigned long n = 0;
        for (; a < hi && n < 64; a += (uint64_t)pg, n++) {
            loc[n] = (struct iovec){buf + n, 1};
            rem[n] = (struct iovec){(void *)(uintptr_t)a, 1};
        }
        /* a partial read (the end of the mapping) is fine */
        if (process_vm_readv(tid, loc, n, rem, n, 0) < 0)
            return -errno;
    }
    return 0;
}

int pf_unwind_fault_in_stack(const char *procfs, pid_t pid)
{
    char path[4200], line[4400];
    snprintf(path, sizeof(path), "%s/%d/maps", procfs, (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    unsigned long lo = 0, hi = 0;
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, " [stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2;
    fclose(f);
    if (!found)
        return -ENOENT;
    if (hi - lo > PF_UNWIND_PREFAULT)
        lo = hi - PF_UNWIND_PREFAULT;
    return pf_unwind_fault_in(pid, lo, hi);
}
