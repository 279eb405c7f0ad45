/*
 * profile_count.h - `powerapi profile --count FUNC[,FUNC...]`: each call of
 * the functions named counted with the kernel's uprobe PMU (the perf
 * engine's pf_count), and calls.csv with their energy per call: the
 * sampled energy of each function (functions.csv's total) over its exact
 * count (DESIGN.md 13.7).
 */
#ifndef CLI_PROFILE_COUNT_H
#define CLI_PROFILE_COUNT_H

#include "perf.h"
#include "profcore.h"

#include <sys/types.h>

/* The counters of spec on process pid and the processes it starts: a
 * command not yet run (cmd: its argv, whose file FUNC alone names) or a
 * running process (cmd NULL: its exe under procfs).  0, or an exit status
 * after one line naming the function and the fix.  timed: each call
 * timed too, with a return probe (calls.csv's wall_mean_ms). */
int cli_count_start(const char *spec, int timed, const char *sysfs, const char *procfs, pid_t pid,
                    char *const *cmd, pf_count **out);
/* calls.csv in dir and summary.json's members for it (*json, the
 * caller's to free).  0 or -errno. */
int cli_count_write(const pf_count *c, pc_prof *prof, const char *dir, char **json);

#endif
