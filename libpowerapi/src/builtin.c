/* builtin.c - the table of built-in modules.
 *
 * Modules are referenced weakly, so that a module left out of a build
 * leaves the others working; the table lists only those present. */
#include "internal.h"

#include <pthread.h>
#include <stddef.h>

#define WEAK __attribute__((weak))
extern const pa_module_ops pa__mod_procfs_cpu WEAK;
extern const pa_module_ops pa__mod_rapl WEAK;
extern const pa_module_ops pa__mod_perf WEAK;
extern const pa_module_ops pa__mod_nic WEAK;
extern const pa_module_ops pa__mod_cpu_tdp WEAK;
extern const pa_module_ops pa__mod_rapl_share WEAK;
extern const pa_module_ops pa__mod_nic_linear WEAK;

#define NMODS 7
static const pa_module_ops *table[NMODS + 1];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    const pa_module_ops *all[NMODS] = {
        &pa__mod_procfs_cpu, &pa__mod_rapl,       &pa__mod_perf,
        &pa__mod_nic,        &pa__mod_cpu_tdp,    &pa__mod_rapl_share,
        &pa__mod_nic_linear,
    };
    size_t n = 0;
    for (size_t i = 0; i < NMODS; i++)
        if (all[i])
            table[n++] = all[i];
    table[n] = NULL;
}

const pa_module_ops *const *pa__builtins(void)
{
    pthread_once(&once, build);
    return table;
}
