/*
 * replay.c - fixture replay for `monitor --clock-step --fixture-states`.
 *
 * Golden tests run several ticks over a fixture tree whose files change
 * between ticks.  The procfs and sysfs roots are copied into a private
 * temporary folder; before tick k the overlay states/<k>/{proc,sys}/ is
 * written over the copies and states/<k>/remove names paths to delete (a
 * process that exits).  Files are rewritten in place (same inode), so a
 * sensor that keeps fds open and preads them sees the new contents, as it
 * would on a live /proc.  The committed fixtures are never modified.
 */
#include "cli.h"
#include "profout.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cli_replay {
    char *tmp;    /* private folder */
    char *procfs; /* tmp/proc */
    char *sysfs;  /* tmp/sys */
    char *states;
};

static const char *CMD = "monitor";

/* Writes src's contents into dst in place (created if missing). */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 0777);
    if (out < 0) {
        int err = -errno;
        close(in);
        return err;
    }
    int err = 0;
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            err = -errno;
            break;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                err = -errno;
                goto done;
            }
            off += w;
        }
    }
done:
    close(in);
    if (close(out) < 0 && !err)
        err = -errno;
    return err;
}

/* nftw has no user pointer: the walk's source and destination roots. */
static const char *walk_src, *walk_dst;
static int walk_err;

static int copy_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    char dst[PATH_MAX];
    const char *rel = path + strlen(walk_src);
    if (snprintf(dst, sizeof(dst), "%s%s", walk_dst, rel) >= (int)sizeof(dst)) {
        walk_err = -ENAMETOOLONG;
        return 1;
    }
    int err = 0;
    switch (type) {
    case FTW_D:
        err = pc_out_mkdirs(dst, 0755);
        break;
    case FTW_F:
        err = copy_file(path, dst, st->st_mode);
        break;
    case FTW_SL: {
        char target[PATH_MAX];
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0) {
            err = -errno;
            break;
        }
        target[n] = '\0';
        unlink(dst);
        if (symlink(target, dst) < 0)
            err = -errno;
        break;
    }
    default: /* unreadable folders, dangling entries: skip */
        break;
    }
    if (err < 0) {
        walk_err = err;
        cli_error(CMD, "fixture replay: cannot copy %s to %s: %s", path, dst, strerror(-err));
        return 1;
    }
    return 0;
}

static int copy_tree(const char *src, const char *dst)
{
    struct stat st;
    if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode)) {
        cli_error(CMD, "fixture replay: %s is not a folder", src);
        return -ENOTDIR;
    }
    walk_src = src;
    walk_dst = dst;
    walk_err = 0;
    int rc = nftw(src, copy_entry, 32, FTW_PHYS);
    if (rc < 0 && !walk_err) {
        walk_err = -errno;
        cli_error(CMD, "fixture replay: cannot read %s: %s", src, strerror(errno));
    }
    return walk_err;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static void rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

void cli_replay_free(cli_replay *r)
{
    if (!r)
        return;
    if (r->tmp)
        rm_tree(r->tmp);
    free(r->tmp);
    free(r->procfs);
    free(r->sysfs);
    free(r->states);
    free(r);
}

int cli_replay_new(cli_replay **out, const char *states, const char *procfs, const char *sysfs,
                   const char **procfs_out, const char **sysfs_out)
{
    struct stat st;
    if (stat(states, &st) < 0 || !S_ISDIR(st.st_mode)) {
        cli_error(CMD, "--fixture-states: %s is not a folder", states);
        return -ENOTDIR;
    }
    cli_replay *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    const char *base = getenv("TMPDIR");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof(tmpl), "%s/powerapi-replay-XXXXXX", base && *base ? base : "/tmp");
    int err = -ENOMEM;
    if (!mkdtemp(tmpl)) {
        err = -errno;
        cli_error(CMD, "fixture replay: mkdtemp %s: %s", tmpl, strerror(errno));
        goto fail;
    }
    r->tmp = strdup(tmpl);
    r->states = strdup(states);
    r->procfs = r->tmp ? join(r->tmp, "proc") : NULL;
    r->sysfs = r->tmp ? join(r->tmp, "sys") : NULL;
    if (!r->tmp || !r->states || !r->procfs || !r->sysfs)
        goto fail;
    if (procfs && (err = copy_tree(procfs, r->procfs)) < 0)
        goto fail;
    if (sysfs && (err = copy_tree(sysfs, r->sysfs)) < 0)
        goto fail;
    *procfs_out = procfs ? r->procfs : NULL;
    *sysfs_out = sysfs ? r->sysfs : NULL;
    *out = r;
    return 0;
fail:
    cli_replay_free(r);
    return err;
}

/* Deletes the paths listed in file (one per line, relative to tmp,
 * starting with proc/ or sys/, no ".." component). */
static int apply_removals(cli_replay *r, const char *file)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    char line[PATH_MAX];
    int err = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        if ((strncmp(line, "proc/", 5) && strncmp(line, "sys/", 4)) || strstr(line, "..")) {
            cli_error(CMD, "fixture replay: %s: bad path '%s'", file, line);
            err = -EINVAL;
            break;
        }
        char *p = join(r->tmp, line);
        if (!p) {
            err = -ENOMEM;
            break;
        }
        rm_tree(p);
        free(p);
    }
    fclose(f);
    return err;
}

int cli_replay_apply(cli_replay *r, unsigned k)
{
    char dir[PATH_MAX], sub[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/%u", r->states, k);
    struct stat st;
    if (stat(dir, &st) < 0)
        return 0;
    snprintf(sub, sizeof(sub), "%s/remove", dir);
    int err = apply_removals(r, sub);
    if (err < 0)
        return err;
    snprintf(sub, sizeof(sub), "%s/proc", dir);
    if (stat(sub, &st) == 0 && (err = copy_tree(sub, r->procfs)) < 0)
        return err;
    snprintf(sub, sizeof(sub), "%s/sys", dir);
    if (stat(sub, &st) == 0 && (err = copy_tree(sub, r->sysfs)) < 0)
        return err;
    return 0;
}
