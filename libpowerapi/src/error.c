/* error.c - errno names and the per-thread detailed message. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_msg[1024];

const char *pa_version(void)
{
    return PA_VERSION_STRING;
}

const char *pa_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
    case -ENOENT:
        return "no such file, module or target";
    case -ESRCH:
        return "no such process";
    case -EINVAL:
        return "invalid argument";
    case -ENOMEM:
        return "out of memory";
    case -EACCES:
        return "permission denied";
    case -EPERM:
        return "operation not permitted";
    case -ENODEV:
        return "not available on this machine";
    case -EBUSY:
        return "busy";
    case -EEXIST:
        return "already exists";
    case -EALREADY:
        return "already running";
    case -ENODATA:
        return "no data yet";
    case -EDEADLK:
        return "would deadlock";
    case -EMFILE:
        return "too many open files";
    case -EPROTO:
        return "malformed data";
    default:
        if (err < 0)
            return strerror(-err);
        return "unknown error";
    }
}

const char *pa_last_error(void)
{
    return last_msg;
}

int pa__verr(int err, const char *fmt, va_list ap)
{
    vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
    return err;
}

int pa__err(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pa__verr(err, fmt, ap);
    va_end(ap);
    return err;
}
