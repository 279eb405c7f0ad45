/*
 * powerapi_jni.c - JNI half of org.powerapi.PowerAPI (libpowerapi_jni.so,
 * linked with the static libpowerapi).
 *
 * Handles are pa_ctx pointers carried in a Java long.  Failures throw
 * org.powerapi.PowerAPIException(errno, pa_last_error()); the Java side
 * serialises close() against the other calls, so a handle is never used
 * after pa_ctx_free.
 */
#include <errno.h>
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "org_powerapi_PowerAPI.h"
#include "powerapi.h"

static pa_ctx *ctx_of(jlong h)
{
    return (pa_ctx *)(intptr_t)h;
}

/* Throws PowerAPIException for rc < 0; returns 1 when it threw. */
static int check(JNIEnv *env, int rc)
{
    if (rc >= 0)
        return 0;
    const char *msg = pa_last_error();
    if (!msg || !*msg)
        msg = pa_strerror(rc);
    jclass cls = (*env)->FindClass(env, "org/powerapi/PowerAPIException");
    if (!cls)
        return 1; /* NoClassDefFoundError pending */
    jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
    jstring jmsg = (*env)->NewStringUTF(env, msg);
    if (ctor && jmsg) {
        jobject ex = (*env)->NewObject(env, cls, ctor, (jint)-rc, jmsg);
        if (ex)
            (*env)->Throw(env, (jthrowable)ex);
    }
    return 1;
}

/* A Java string as modified UTF-8 (NULL stays NULL).  *failed is set when
 * the conversion threw (OutOfMemoryError pending). */
static const char *utf(JNIEnv *env, jstring s, int *failed)
{
    if (!s)
        return NULL;
    const char *c = (*env)->GetStringUTFChars(env, s, NULL);
    if (!c)
        *failed = 1;
    return c;
}

static void unutf(JNIEnv *env, jstring s, const char *c)
{
    if (s && c)
        (*env)->ReleaseStringUTFChars(env, s, c);
}

static void throw_iae(JNIEnv *env, const char *msg)
{
    jclass cls = (*env)->FindClass(env, "java/lang/IllegalArgumentException");
    if (cls)
        (*env)->ThrowNew(env, cls, msg);
}

static int pid_arg(JNIEnv *env, jlong pid)
{
    if (pid <= 0 || pid > INT32_MAX) {
        throw_iae(env, "powerapi: pid out of range");
        return 0;
    }
    return 1;
}

JNIEXPORT jstring JNICALL Java_org_powerapi_PowerAPI_nVersion(JNIEnv *env, jclass cls)
{
    return (*env)->NewStringUTF(env, pa_version());
}

JNIEXPORT jlong JNICALL Java_org_powerapi_PowerAPI_nOpen(JNIEnv *env, jclass cls, jstring procfs,
                                                         jstring sysfs, jstring devfs, jstring hwdb)
{
    int failed = 0;
    pa_ctx *ctx = NULL;
    pa_ctx_opts o;
    memset(&o, 0, sizeof(o));
    o.procfs = utf(env, procfs, &failed);
    o.sysfs = utf(env, sysfs, &failed);
    o.devfs = utf(env, devfs, &failed);
    o.hwdb = utf(env, hwdb, &failed);
    if (!failed)
        check(env, pa_ctx_new(&ctx, &o));
    unutf(env, procfs, o.procfs);
    unutf(env, sysfs, o.sysfs);
    unutf(env, devfs, o.devfs);
    unutf(env, hwdb, o.hwdb);
    return (jlong)(intptr_t)ctx;
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nClose(JNIEnv *env, jclass cls, jlong h)
{
    pa_ctx_free(ctx_of(h));
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nEnable(JNIEnv *env, jclass cls, jlong h,
                                                          jstring name, jstring options)
{
    int failed = 0;
    if (!name) {
        throw_iae(env, "powerapi: module name is null");
        return;
    }
    const char *n = utf(env, name, &failed);
    const char *o = utf(env, options, &failed);
    if (!failed)
        check(env, pa_module_enable(ctx_of(h), n, o));
    unutf(env, name, n);
    unutf(env, options, o);
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nDisable(JNIEnv *env, jclass cls, jlong h,
                                                           jstring name)
{
    int failed = 0;
    if (!name) {
        throw_iae(env, "powerapi: module name is null");
        return;
    }
    const char *n = utf(env, name, &failed);
    if (!failed)
        check(env, pa_module_disable(ctx_of(h), n));
    unutf(env, name, n);
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nConfigure(JNIEnv *env, jclass cls, jlong h,
                                                             jstring name, jstring options)
{
    int failed = 0;
    if (!name) {
        throw_iae(env, "powerapi: module name is null");
        return;
    }
    const char *n = utf(env, name, &failed);
    const char *o = utf(env, options, &failed);
    if (!failed)
        check(env, pa_module_configure(ctx_of(h), n, o));
    unutf(env, name, n);
    unutf(env, options, o);
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nWatchPid(JNIEnv *env, jclass cls, jlong h,
                                                            jlong pid, jint flags)
{
    if (pid_arg(env, pid))
        check(env, pa_watch_pid(ctx_of(h), (pid_t)pid, (unsigned)flags));
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nUnwatchPid(JNIEnv *env, jclass cls, jlong h,
                                                              jlong pid)
{
    if (pid_arg(env, pid))
        check(env, pa_unwatch_pid(ctx_of(h), (pid_t)pid));
}

JNIEXPORT jobjectArray JNICALL Java_org_powerapi_PowerAPI_nCgroupNames(JNIEnv *env, jclass cls,
                                                                       jstring jroot, jstring jpath)
{
    (void)cls;
    if (!jpath) {
        check(env, -EINVAL);
        return NULL;
    }
    const char *root = jroot ? (*env)->GetStringUTFChars(env, jroot, NULL) : NULL;
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    pa_cgroup_names n;
    int rc = pa_cgroup_names_resolve(root, path, &n);
    if (root)
        (*env)->ReleaseStringUTFChars(env, jroot, root);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    if (rc < 0)
        memset(&n, 0, sizeof(n)); /* -ENOENT: nothing to name */
    const char *v[8] = {n.runtime,       n.container_id, n.container_name, n.pod_name,
                        n.pod_namespace, n.pod_uid,      n.unit,           n.source};
    jclass sc = (*env)->FindClass(env, "java/lang/String");
    jobjectArray a = sc ? (*env)->NewObjectArray(env, 8, sc, NULL) : NULL;
    for (int i = 0; a && i < 8; i++) {
        jstring s = (*env)->NewStringUTF(env, v[i]);
        if (!s)
            return NULL;
        (*env)->SetObjectArrayElement(env, a, i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return a;
}

/* The VMs of procfs and rootfs (pa_vm_list), 9 strings each: name, uuid,
 * hypervisor, manager, id, names_source, cgroup, pid, and the vCPU
 * threads' ids joined by ','. */
#define VM_FIELDS 9
JNIEXPORT jobjectArray JNICALL Java_org_powerapi_PowerAPI_nVms(JNIEnv *env, jclass cls,
                                                               jstring jprocfs, jstring jrootfs)
{
    (void)cls;
    const char *procfs = jprocfs ? (*env)->GetStringUTFChars(env, jprocfs, NULL) : NULL;
    const char *rootfs = jrootfs ? (*env)->GetStringUTFChars(env, jrootfs, NULL) : NULL;
    pa_vm_info *vms = NULL;
    size_t n = 0;
    int rc = pa_vm_list(procfs, rootfs, &vms, &n);
    if (procfs)
        (*env)->ReleaseStringUTFChars(env, jprocfs, procfs);
    if (rootfs)
        (*env)->ReleaseStringUTFChars(env, jrootfs, rootfs);
    if (rc < 0) {
        check(env, rc);
        return NULL;
    }
    jclass sc = (*env)->FindClass(env, "java/lang/String");
    jobjectArray a = sc ? (*env)->NewObjectArray(env, (jsize)(n * VM_FIELDS), sc, NULL) : NULL;
    for (size_t i = 0; a && i < n; i++) {
        const pa_vm_info *v = &vms[i];
        char pid[16], tids[PA_VM_MAX_VCPUS * 12 + 1] = "";
        snprintf(pid, sizeof(pid), "%d", (int)v->pid);
        for (unsigned k = 0, o = 0; k < v->nvcpus; k++)
            o += (unsigned)snprintf(tids + o, sizeof(tids) - o, "%s%d", k ? "," : "",
                                    (int)v->vcpu_tids[k]);
        const char *f[VM_FIELDS] = {v->name,   v->uuid,   v->hypervisor, v->manager, v->id,
                                    v->source, v->cgroup, pid,           tids};
        for (int k = 0; k < VM_FIELDS; k++) {
            jstring s = (*env)->NewStringUTF(env, f[k]);
            if (!s) {
                free(vms);
                return NULL;
            }
            (*env)->SetObjectArrayElement(env, a, (jsize)(i * VM_FIELDS + (size_t)k), s);
            (*env)->DeleteLocalRef(env, s);
        }
    }
    free(vms);
    return a;
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nTick(JNIEnv *env, jclass cls, jlong h,
                                                        jlong time_ns)
{
    if (time_ns < 0)
        check(env, pa_tick(ctx_of(h)));
    else
        check(env, pa_tick_at(ctx_of(h), (uint64_t)time_ns));
}

JNIEXPORT jdoubleArray JNICALL Java_org_powerapi_PowerAPI_nPower(JNIEnv *env, jclass cls, jlong h,
                                                                 jint which, jlong id,
                                                                 jlongArray ints)
{
    pa_power p;
    int rc;
    if (which != 2 && !pid_arg(env, id))
        return NULL;
    switch (which) {
    case 0:
        rc = pa_pid_power(ctx_of(h), (pid_t)id, &p);
        break;
    case 1:
        rc = pa_tid_power(ctx_of(h), (pid_t)id, &p);
        break;
    default:
        rc = pa_system_power(ctx_of(h), &p);
        break;
    }
    if (check(env, rc))
        return NULL;
    /* Order of the Power record's components; time_ns and flags apart, as
     * longs (a double would round time_ns after 104 days of uptime). */
    jdouble v[9] = {p.cpu_w, p.nic_w,   p.total_w,    p.idle_w,    p.cpu_j,
                    p.nic_j, p.total_j, p.interval_s, p.cpu_time_s};
    jlong l[2] = {(jlong)p.time_ns, (jlong)p.flags};
    (*env)->SetLongArrayRegion(env, ints, 0, 2, l);
    if ((*env)->ExceptionCheck(env))
        return NULL;
    jdoubleArray a = (*env)->NewDoubleArray(env, 9);
    if (a)
        (*env)->SetDoubleArrayRegion(env, a, 0, 9, v);
    return a;
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nStart(JNIEnv *env, jclass cls, jlong h,
                                                         jlong period_ns)
{
    if (period_ns <= 0) {
        throw_iae(env, "powerapi: period must be positive");
        return;
    }
    check(env, pa_start(ctx_of(h), (uint64_t)period_ns, NULL, NULL));
}

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nStop(JNIEnv *env, jclass cls, jlong h)
{
    check(env, pa_stop(ctx_of(h)));
}

/* ------------------------------------------------------------------ */
/* Scopes                                                              */
/* ------------------------------------------------------------------ */

JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nScopeConfigure(JNIEnv *env, jclass cls, jlong h,
                                                                  jlong max_names, jlong pid,
                                                                  jdouble carbon)
{
    if (max_names < 0 || pid < -1 || pid > INT32_MAX) {
        throw_iae(env, "powerapi: maxNames < 0, or pid out of range");
        return;
    }
    /* carbon: 0 none, else checked by the library (-ERANGE, its message) */
    pa_scope_opts o = {
        .max_names = (size_t)max_names, .pid = (pid_t)pid, .carbon_g_per_kwh = carbon};
    check(env, pa_scope_configure(ctx_of(h), &o));
}

/* A scope name that must not be null: NULL with an exception pending. */
static const char *scope_name(JNIEnv *env, jstring name)
{
    int failed = 0;
    if (!name) {
        throw_iae(env, "powerapi: scope name is null");
        return NULL;
    }
    return utf(env, name, &failed);
}

/* cpu_ns < 0: the thread's CPU clock. */
JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nScopeBegin(JNIEnv *env, jclass cls, jlong h,
                                                              jstring name, jlong cpu_ns)
{
    const char *n = scope_name(env, name);
    if (n)
        check(env, cpu_ns < 0 ? pa_scope_begin(ctx_of(h), n)
                              : pa_scope_begin_at(ctx_of(h), n, (uint64_t)cpu_ns));
    unutf(env, name, n);
}

/* Fills d with the 5 doubles of pa_scope_result and l with depth and
 * flags. */
JNIEXPORT void JNICALL Java_org_powerapi_PowerAPI_nScopeEnd(JNIEnv *env, jclass cls, jlong h,
                                                            jstring name, jlong cpu_ns,
                                                            jdoubleArray d, jlongArray l)
{
    int failed = 0;
    const char *n = utf(env, name, &failed);
    pa_scope_result r;
    int rc = -1;
    if (!failed)
        rc = cpu_ns < 0 ? pa_scope_end(ctx_of(h), n, &r)
                        : pa_scope_end_at(ctx_of(h), n, (uint64_t)cpu_ns, &r);
    unutf(env, name, n);
    if (failed || check(env, rc))
        return;
    jdouble dv[5] = {r.cpu_time_s, r.self_cpu_time_s, r.energy_j, r.self_energy_j, r.j_per_cpu_s};
    jlong lv[2] = {(jlong)r.depth, (jlong)r.flags};
    (*env)->SetDoubleArrayRegion(env, d, 0, 5, dv);
    (*env)->SetLongArrayRegion(env, l, 0, 2, lv);
}

/* Every scope name of the context, in pa_scope_list's order. */
JNIEXPORT jobjectArray JNICALL Java_org_powerapi_PowerAPI_nScopeNames(JNIEnv *env, jclass cls,
                                                                      jlong h)
{
    pa_scope_stats *s = NULL;
    int n = pa_scope_list(ctx_of(h), NULL, 0);
    for (;;) {
        if (check(env, n))
            goto out;
        pa_scope_stats *t = realloc(s, sizeof(*s) * (size_t)(n ? n : 1));
        if (!t) {
            check(env, -ENOMEM);
            goto out;
        }
        s = t;
        int m = pa_scope_list(ctx_of(h), s, (size_t)n);
        if (m <= n) {
            n = m;
            break;
        }
        n = m;
    }
    jclass str = (*env)->FindClass(env, "java/lang/String");
    jobjectArray a = str ? (*env)->NewObjectArray(env, n, str, NULL) : NULL;
    for (int i = 0; a && i < n; i++) {
        jstring js = (*env)->NewStringUTF(env, s[i].name);
        if (!js) {
            a = NULL;
            break;
        }
        (*env)->SetObjectArrayElement(env, a, i, js);
        (*env)->DeleteLocalRef(env, js);
    }
    free(s);
    return a;
out:
    free(s);
    return NULL;
}

/* One name's aggregates: d gets the 16 doubles of pa_scope_stats in
 * order (the carbon ones last), l calls, rated_calls, measured_calls and flags; returns the
 * note (or null). */
JNIEXPORT jstring JNICALL Java_org_powerapi_PowerAPI_nScopeGet(JNIEnv *env, jclass cls, jlong h,
                                                               jstring name, jdoubleArray d,
                                                               jlongArray l)
{
    const char *n = scope_name(env, name);
    if (!n)
        return NULL;
    pa_scope_stats s;
    int rc = pa_scope_get(ctx_of(h), n, &s);
    unutf(env, name, n);
    if (check(env, rc))
        return NULL;
    jdouble dv[16] = {s.cpu_time_s,       s.self_cpu_time_s, s.energy_j,    s.self_energy_j,
                      s.mean_j,           s.p50_j,           s.p95_j,       s.p99_j,
                      s.self_mean_j,      s.self_p50_j,      s.self_p95_j,  s.self_p99_j,
                      s.carbon_g_per_kwh, s.co2e_g,          s.self_co2e_g, s.mean_co2e_g};
    jlong lv[4] = {(jlong)s.calls, (jlong)s.rated_calls, (jlong)s.measured_calls, (jlong)s.flags};
    (*env)->SetDoubleArrayRegion(env, d, 0, 16, dv);
    (*env)->SetLongArrayRegion(env, l, 0, 4, lv);
    return s.note ? (*env)->NewStringUTF(env, s.note) : NULL;
}
