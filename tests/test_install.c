/*
 * test_install.c - `cmake --install` into a temporary prefix, then a
 * user's program built against it twice: with pkg-config and with
 * find_package(powerapi) (shared and static), and run; it registers a
 * sensor of its own on the installed powerapi_module.h.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(install_and_build_a_user_program)
{
#ifdef PA_SANITIZE_BUILD
    printf("skipped: the sanitizer build's libraries need the sanitizer "
           "runtime in the user's program\n");
    return;
#endif
    char *prefix = pa_test_tmpdir();
    char *out = NULL, *cmd;
    ck_assert(asprintf(&cmd, "cmake --install '%s' --prefix '%s' 2>&1", PA_BINARY_DIR, prefix) > 0);
    int rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "install failed: %s", out);
    free(cmd);
    free(out);
    const char *files[] = {"include/powerapi.h",
                           "include/powerapi_module.h",
                           "lib/libpowerapi.a",
                           "lib/libpowerapi.so",
                           "bin/powerapi",
                           "share/powerapi/hwdb.txt",
                           "lib/pkgconfig/powerapi.pc",
                           "lib/cmake/powerapi/powerapiConfig.cmake"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", prefix, files[i]);
        ck_assert_msg(access(path, F_OK) == 0, "%s not installed", files[i]);
    }
    /* pkg-config */
    ck_assert(asprintf(&cmd,
                       "cd '%s' && PKG_CONFIG_PATH='%s/lib/pkgconfig' "
                       "cc -o prog '%s/install/prog.c' "
                       "$(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config "
                       "--cflags --libs powerapi) && "
                       "LD_LIBRARY_PATH='%s/lib' ./prog 2>&1",
                       prefix, prefix, PA_SOURCE_TESTS, prefix, prefix) > 0);
    rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "pkg-config program: rc %d: %s", rc, out);
    ck_assert_ptr_nonnull(strstr(out, "version=" PA_VERSION_STRING));
    free(cmd);
    free(out);
    /* find_package, shared and static */
    ck_assert(asprintf(&cmd,
                       "cmake -S '%s/install' -B '%s/userbuild' "
                       "-DCMAKE_PREFIX_PATH='%s' >/dev/null 2>&1 && "
                       "cmake --build '%s/userbuild' 2>&1 >/dev/null && "
                       "LD_LIBRARY_PATH='%s/lib' '%s/userbuild/prog_shared' && "
                       "'%s/userbuild/prog_static' 2>&1",
                       PA_SOURCE_TESTS, prefix, prefix, prefix, prefix, prefix, prefix) > 0);
    rc = pa_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "find_package program: rc %d: %s", rc, out);
    free(cmd);
    free(out);
    pa_test_rmtree(prefix);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("install");
    TCase *tc = tcase_create("install");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, install_and_build_a_user_program);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
