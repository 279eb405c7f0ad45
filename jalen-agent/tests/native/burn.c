/*
 * burn.c - the native methods of NativeBurn.java, which test_jalen_trace
 * traces at their Java call sites (DESIGN.md 11.2): burn() runs 0.5 ms of
 * its thread's CPU time, fail() throws IllegalStateException, where()
 * gives 45, nop() does nothing (bench/bench_jalen_trace.sh).  Built with
 * the JDK's jni.h into libjalen_testnative.so.
 */
#include <jni.h>
#include <time.h>

JNIEXPORT void JNICALL Java_NativeBurn_burn(JNIEnv *env, jclass cls);
JNIEXPORT void JNICALL Java_NativeBurn_fail(JNIEnv *env, jclass cls);
JNIEXPORT jint JNICALL Java_NativeBurn_where(JNIEnv *env, jobject self);
JNIEXPORT void JNICALL Java_NativeBurn_nop(JNIEnv *env, jclass cls);

static long long thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

JNIEXPORT void JNICALL Java_NativeBurn_burn(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    volatile unsigned long long x = 1;
    long long end = thread_ns() + 500000;
    while (thread_ns() < end)
        for (int i = 0; i < 200; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
}

JNIEXPORT void JNICALL Java_NativeBurn_fail(JNIEnv *env, jclass cls)
{
    (void)cls;
    jclass e = (*env)->FindClass(env, "java/lang/IllegalStateException");
    if (e)
        (*env)->ThrowNew(env, e, "thrown by native code");
}

JNIEXPORT jint JNICALL Java_NativeBurn_where(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return 45;
}

JNIEXPORT void JNICALL Java_NativeBurn_nop(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
}
