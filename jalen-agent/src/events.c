/*
 * events.c - the JVMTI events the agent takes and what each does: VMInit
 * (the threads, the classes loaded so far, the agent's threads), VMDeath
 * (the last window), ClassPrepare (jmethodIDs made ahead, so that ASGCT
 * can name every frame; the scope API's natives bound), the compiled
 * methods' loads and unloads (nmethods.c), ThreadStart and ThreadEnd
 * (javathreads.c), NativeMethodBind (net.c) and, for recovery,
 * DynamicCodeGenerated (unwind.c).
 */
#include "jalen.h"
#include "mxbean.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Classes: jmethodIDs made ahead, so that ASGCT can name every frame  */
/* ------------------------------------------------------------------ */

static void jl_prepare_class(jvmtiEnv *jvmti, JNIEnv *jni, jclass klass)
{
    jl_scope_bind(jvmti, jni, klass);
    jalen_mxbean_class_prepared(jvmti, klass);
    jint n = 0;
    jmethodID *ms = NULL;
    if ((*jvmti)->GetClassMethods(jvmti, klass, &n, &ms) == JVMTI_ERROR_NONE && ms)
        (*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
}

static void JNICALL jl_on_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr, jclass klass)
{
    (void)jvmti;
    (void)jni;
    (void)thr;
    (void)klass;
}

static void JNICALL jl_on_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr, jclass klass)
{
    (void)thr;
    jl_prepare_class(jvmti, jni, klass);
}

static void JNICALL jl_on_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                               const void *code_addr, jint map_length,
                                               const jvmtiAddrLocationMap *map,
                                               const void *compile_info)
{
    (void)jvmti;
    jl_nmethods_load(method, code_addr, code_size, map_length, map, compile_info);
}

static void JNICALL jl_on_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method,
                                                 const void *code_addr)
{
    (void)jvmti;
    (void)method;
    jl_nmethods_unload(code_addr);
}

/* ------------------------------------------------------------------ */
/* VMInit and VMDeath                                                  */
/* ------------------------------------------------------------------ */

/* The classes loaded before VMInit (or the attach) get no ClassPrepare */
static void jl_prepare_loaded_classes(jvmtiEnv *jvmti, JNIEnv *jni)
{
    jint nc = 0;
    jclass *cs = NULL;
    if ((*jvmti)->GetLoadedClasses(jvmti, &nc, &cs) != JVMTI_ERROR_NONE)
        return;
    /* GetLoadedClasses made nc local references at once (hundreds at
     * VMInit): declared, or -Xcheck:jni warns "JNI local refs: 441,
     * exceeds capacity: 32" at the next JNI call */
    if (nc > 0)
        (void)(*jni)->EnsureLocalCapacity(jni, nc);
    for (jint i = 0; i < nc; i++) {
        jl_prepare_class(jvmti, jni, cs[i]);
        (*jni)->DeleteLocalRef(jni, cs[i]);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char *)cs);
}

void JNICALL jl_on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thr)
{
    if (!atomic_load(&jl_run.active))
        return;
    if (jl_run.o.mode == JL_MODE_CPU)
        jl_unwind_vm_init(jvmti, jni, thr);
    jl_java_threads_vm_init(jvmti, jni, thr);
    jl_prepare_loaded_classes(jvmti, jni);
    jl_trace_vm_init(jvmti, jni);
    jl_agent_threads_start(jvmti, jni);
}

static void JNICALL jl_on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
    (void)jvmti;
    (void)jni;
    if (!atomic_load(&jl_run.active))
        return;
    jl_agent_finish(jl_run.o.quiet ? NULL : stderr);
}

/* ------------------------------------------------------------------ */
/* The callbacks and the events turned on                              */
/* ------------------------------------------------------------------ */

static const jvmtiEvent jl_events[] = {JVMTI_EVENT_VM_INIT,
                                       JVMTI_EVENT_VM_DEATH,
                                       JVMTI_EVENT_THREAD_START,
                                       JVMTI_EVENT_THREAD_END,
                                       JVMTI_EVENT_CLASS_LOAD,
                                       JVMTI_EVENT_CLASS_PREPARE,
                                       JVMTI_EVENT_COMPILED_METHOD_LOAD,
                                       JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
                                       JVMTI_EVENT_NATIVE_METHOD_BIND};

void jl_events_mode(jvmtiEventMode mode)
{
    size_t nev = sizeof(jl_events) / sizeof(jl_events[0]) - (jl_run.o.net ? 0 : 1);
    for (size_t i = 0; i < nev; i++)
        (*jl_run.jvmti)->SetEventNotificationMode(jl_run.jvmti, mode, jl_events[i], NULL);
    if (jl_trace_on())
        (*jl_run.jvmti)
            ->SetEventNotificationMode(jl_run.jvmti, mode, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
}

int jl_events_init(char *err, size_t errlen)
{
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof(cb));
    cb.VMInit = jl_on_vm_init;
    cb.VMDeath = jl_on_vm_death;
    cb.ThreadStart = jl_on_thread_start;
    cb.ThreadEnd = jl_on_thread_end;
    cb.ClassLoad = jl_on_class_load;
    cb.ClassPrepare = jl_on_class_prepare;
    cb.CompiledMethodLoad = jl_on_compiled_method_load;
    cb.CompiledMethodUnload = jl_on_compiled_method_unload;
    if (jl_run.o.net)
        cb.NativeMethodBind = jl_on_native_bind;
    /* always: tracing may begin at runtime (jl_trace_set enables it) */
    cb.ClassFileLoadHook = jl_trace_on_class_file;
    /* without it, a failed walk keeps its pseudo-frame as before */
    if (jl_run.o.mode == JL_MODE_CPU && jl_unwind_init(jl_run.jvmti, &cb, jl_smp.asgct) < 0 &&
        !jl_run.o.quiet)
        fprintf(stderr, "jalen: this JVM's code cache is not found (gHotSpotVMStructs): "
                        "samples in stubs stay under [unknown Java]\n");
    if ((*jl_run.jvmti)->SetEventCallbacks(jl_run.jvmti, &cb, sizeof(cb)) != JVMTI_ERROR_NONE) {
        snprintf(err, errlen, "cannot set the JVMTI callbacks");
        return -ENOTSUP;
    }
    return 0;
}
