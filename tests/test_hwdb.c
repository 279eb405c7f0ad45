/* test_hwdb.c - the hardware database: the shipped data/hwdb.txt, matching
 * rules, the file format and its errors (file:line). */
#include "internal.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Q6600_NAME "Intel(R) Core(TM)2 Quad CPU    Q6600  @ 2.40GHz"

static pa_hwdb_cpu cpu_of(const char *model)
{
    pa_hwdb_cpu c;
    memset(&c, 0, sizeof(c));
    int rc = pa__hwdb_cpu(PA_TEST_HWDB, model, &c);
    ck_assert_msg(rc == 0, "no record for '%s': %s", model, pa_last_error());
    return c;
}

/* Writes text into a temporary hwdb file; returns its path in dir. */
static char *tmp_hwdb(char **dir, const char *text)
{
    *dir = pa_test_tmpdir();
    pa_test_write(*dir, "hwdb.txt", "%s", text);
    char *path;
    ck_assert(asprintf(&path, "%s/hwdb.txt", *dir) > 0);
    return path;
}

START_TEST(test_papers_cpus)
{
    /* E-Surgeon's Dell T3400 (Core 2 Quad Q6600): the model name has runs
     * of blanks, folded before matching */
    pa_hwdb_cpu c = cpu_of(Q6600_NAME);
    ck_assert_str_eq(c.match, "Q6600");
    ck_assert_double_eq(c.tdp_w, 105);
    ck_assert_double_eq(c.base_mhz, 2400);
    ck_assert_uint_eq(c.threads, 4);
    ck_assert_uint_eq(c.nvolt, 0); /* Intel gives a VID range only */
    ck_assert_ptr_nonnull(strstr(c.source, "315592"));

    c = cpu_of("Intel(R) Xeon(R) CPU E5-1410 0 @ 2.80GHz");
    ck_assert_str_eq(c.match, "E5-1410");
    ck_assert_double_eq(c.tdp_w, 80);
    ck_assert_double_eq(c.base_mhz, 2800);
    ck_assert_uint_eq(c.threads, 8);
    ck_assert_ptr_nonnull(strstr(c.source, "ARK"));
}
END_TEST

START_TEST(test_voltage_table)
{
    pa_hwdb_cpu c = cpu_of("Intel(R) Pentium(R) M processor 1600MHz");
    ck_assert_double_eq(c.tdp_w, 24.5);
    ck_assert_uint_eq(c.nvolt, 6);
    ck_assert_double_eq(c.volt[0].mhz, 600);
    ck_assert_double_eq(c.volt[0].volt, 0.956);
    ck_assert_double_eq(c.volt[3].mhz, 1200);
    ck_assert_double_eq(c.volt[3].volt, 1.276);
    ck_assert_double_eq(c.volt[5].mhz, 1600);
    ck_assert_double_eq(c.volt[5].volt, 1.484);
    ck_assert_ptr_nonnull(strstr(c.source, "301170"));
}
END_TEST

START_TEST(test_current_parts)
{
    pa_hwdb_cpu c = cpu_of("Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz");
    ck_assert_str_eq(c.match, "i7-8700K");
    ck_assert_double_eq(c.tdp_w, 95);
    c = cpu_of("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz");
    ck_assert_str_eq(c.match, "i7-8700");
    ck_assert_double_eq(c.tdp_w, 65);
    c = cpu_of("12th Gen Intel(R) Core(TM) i9-12900K");
    ck_assert_double_eq(c.tdp_w, 125);
    ck_assert_double_eq(c.base_mhz, 3200);
    c = cpu_of("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz");
    ck_assert_double_eq(c.tdp_w, 270);
    ck_assert_uint_eq(c.threads, 80);
    c = cpu_of("Intel(R) Xeon(R) Platinum 8480+");
    ck_assert_double_eq(c.tdp_w, 350);
    c = cpu_of("AMD EPYC 7763 64-Core Processor");
    ck_assert_double_eq(c.tdp_w, 280);
    ck_assert_double_eq(c.base_mhz, 2450);
    c = cpu_of("AMD Ryzen 9 5950X 16-Core Processor");
    ck_assert_double_eq(c.tdp_w, 105);
    ck_assert_double_eq(c.base_mhz, 3400);
    c = cpu_of("AMD Ryzen 7 5800X3D 8-Core Processor");
    ck_assert_str_eq(c.match, "Ryzen 7 5800X3D");
    c = cpu_of("AMD Ryzen 7 5800X 8-Core Processor");
    ck_assert_str_eq(c.match, "Ryzen 7 5800X");
    ck_assert_double_eq(c.base_mhz, 3800);
}
END_TEST

START_TEST(test_word_boundaries_and_versions)
{
    pa_hwdb_cpu c;
    /* a part without a record must not take a neighbour's */
    ck_assert_int_eq(pa__hwdb_cpu(PA_TEST_HWDB, "Intel(R) Core(TM) i7-8700T CPU @ 2.40GHz", &c),
                     -ENOENT);
    ck_assert_int_eq(pa__hwdb_cpu(PA_TEST_HWDB, "AMD EPYC 7502P 32-Core Processor", &c), -ENOENT);
    /* "E5-2680" (Sandy Bridge) is not "E5-2680 v4" (Broadwell) */
    c = cpu_of("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz");
    ck_assert_str_eq(c.match, "E5-2680 v4");
    ck_assert_double_eq(c.tdp_w, 120);
    c = cpu_of("Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz");
    ck_assert_str_eq(c.match, "E5-2680");
    ck_assert_double_eq(c.tdp_w, 130);
    ck_assert_int_eq(pa__hwdb_cpu(PA_TEST_HWDB, "Intel(R) Xeon(R) CPU E5-2680 v5 @ 2.40GHz", &c),
                     -ENOENT);
}
END_TEST

START_TEST(test_generic_vm_names_unknown)
{
    pa_hwdb_cpu c;
    const char *names[] = {"Intel(R) Xeon(R) Processor", "QEMU Virtual CPU version 2.5+",
                           "Common KVM processor", ""};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        int rc = pa__hwdb_cpu(PA_TEST_HWDB, names[i], &c);
        ck_assert_msg(rc == -ENOENT, "'%s' matched \"%s\"", names[i], c.match);
    }
    /* no match is not a failure of the file: the last error is untouched */
    pa__err(-EINVAL, "marker");
    ck_assert_int_eq(pa__hwdb_cpu(PA_TEST_HWDB, "Intel(R) Xeon(R) Processor", &c), -ENOENT);
    ck_assert_str_eq(pa_last_error(), "marker");
}
END_TEST

/* The default TDP per CPU of cpu-tdp (5 W) is argued from the median TDP
 * per hardware thread of the shipped records: keep that argument true. */
START_TEST(test_default_reasoning_holds)
{
    char *text = pa_test_slurp(PA_TEST_HWDB);
    ck_assert_ptr_nonnull(text);
    double v[1024];
    size_t n = 0, records = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "cpu ", 4))
            continue;
        records++;
        char *t = strstr(line, " tdp="), *th = strstr(line, " threads=");
        ck_assert_ptr_nonnull(t);
        ck_assert_msg(th != NULL, "record without threads=: %s", line);
        ck_assert(n < 1024);
        v[n++] = strtod(t + 5, NULL) / strtod(th + 9, NULL);
    }
    free(text);
    ck_assert_uint_ge(records, 100);
    /* insertion sort, then the median */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    ck_assert_msg(median >= 4 && median <= 7, "median %g W per thread", median);
}
END_TEST

START_TEST(test_nics)
{
    pa_hwdb_nic n;
    ck_assert_int_eq(pa__hwdb_nic(PA_TEST_HWDB, "e100", &n), 0);
    ck_assert_uint_eq(n.nstates, 2);
    ck_assert_double_eq(n.state[0].mbps, 10);
    ck_assert_double_eq(n.state[0].watts, 0.58);
    ck_assert_double_eq(n.state[1].mbps, 100);
    ck_assert_double_eq(n.idle_w, 0);
    ck_assert_ptr_nonnull(strstr(n.source, "8255x"));
    ck_assert_int_eq(pa__hwdb_nic(PA_TEST_HWDB, "default", &n), 0);
    ck_assert_uint_eq(n.nstates, 4);
    ck_assert_double_eq(n.state[3].mbps, 10000);
    ck_assert_ptr_nonnull(strstr(n.source, "assumed"));
    ck_assert_int_eq(pa__hwdb_nic(PA_TEST_HWDB, "no-such-driver", &n), -ENOENT);
    /* drivers match exactly, not by substring */
    ck_assert_int_eq(pa__hwdb_nic(PA_TEST_HWDB, "e10", &n), -ENOENT);
}
END_TEST

START_TEST(test_format_features)
{
    char *dir;
    char *path = tmp_hwdb(&dir, "# a comment\n"
                                "\n"
                                "   # indented comment\n"
                                "cpu \"Foo CPU\" tdp=10 mhz=1000 source=\"sheet "
                                "\\\"A\\\" # not a comment\"  # trailing\n"
                                "cpu \"Foo CPU Pro\" mhz=2000 tdp=20.5 threads=4 "
                                "volt=500:0.8,2000:1.2 source=\"B\"\n"
                                "nic \"drv\" state=100:1.5,1000:2.25 idle=0.5 "
                                "source=\"C\"\n");
    pa_hwdb_cpu c;
    /* case and blanks do not matter; the longest match wins */
    ck_assert_int_eq(pa__hwdb_cpu(path, "ACME  foo   cpu  PRO 9", &c), 0);
    ck_assert_str_eq(c.match, "Foo CPU Pro");
    ck_assert_double_eq(c.tdp_w, 20.5);
    ck_assert_uint_eq(c.threads, 4);
    ck_assert_uint_eq(c.nvolt, 2);
    ck_assert_double_eq(c.volt[1].volt, 1.2);
    ck_assert_int_eq(pa__hwdb_cpu(path, "ACME Foo CPU", &c), 0);
    ck_assert_str_eq(c.match, "Foo CPU");
    ck_assert_str_eq(c.source, "sheet \"A\" # not a comment");
    ck_assert_uint_eq(c.threads, 0);
    pa_hwdb_nic n;
    ck_assert_int_eq(pa__hwdb_nic(path, "drv", &n), 0);
    ck_assert_double_eq(n.idle_w, 0.5);
    ck_assert_double_eq(n.state[1].watts, 2.25);
    free(path);
    pa_test_rmtree(dir);
}
END_TEST

/* The published curves of the shipped file: every record parses, points
 * in order, and the longest match wins as for cpu records. */
START_TEST(test_curves)
{
    pa_curve c;
    ck_assert_int_eq(pa__hwdb_curve(PA_TEST_HWDB, "Intel(R) Xeon(R) CPU X5670 @ 2.93GHz", &c), 0);
    ck_assert_str_eq(c.match, "X5670");
    ck_assert_uint_eq(c.n, 11);
    ck_assert_int_eq(c.per, PA_CURVE_SERVER);
    ck_assert_uint_eq(c.packages, 2);
    ck_assert_uint_eq(c.threads, 24);
    ck_assert_double_eq(c.watts[0], 66);
    ck_assert_double_eq(c.watts[10], 247);
    ck_assert_ptr_nonnull(strstr(c.source, "power_ssj2008-20100315-00239"));
    /* interpolation: halfway between 50 % (156 W) and 60 % (173 W) */
    ck_assert_double_eq_tol(pa__curve_at(&c, 0.55), 164.5, 1e-9);
    ck_assert_double_eq(pa__curve_at(&c, -1), 66);
    ck_assert_double_eq(pa__curve_at(&c, 2), 247);
    ck_assert_int_eq(pa__hwdb_curve(PA_TEST_HWDB, "Intel(R) Xeon(R) CPU X5672", &c), -ENOENT);
    /* a curve and a cpu record may share a match string */
    pa_hwdb_cpu cpu;
    ck_assert_int_eq(pa__hwdb_cpu(PA_TEST_HWDB, "Xeon X5670", &cpu), 0);
    ck_assert_double_eq(cpu.tdp_w, 95);
}
END_TEST

/* Each broken file gives -EINVAL and a message naming file:line. */
static const struct {
    const char *text;
    unsigned line;
    const char *says;
} bad[] = {
    {"cpu \"A\" tdp=1 mhz=1 source=\"s\"\ngpu \"B\"\n", 2, "'cpu', 'curve' or 'nic'"},
    {"curve \"A\" load=0:10,100:20 source=\"s\"\n", 1, "needs load=, per="},
    {"curve \"A\" load=0:10 per=server source=\"s\"\n", 1, "at least 2 points"},
    {"curve \"A\" load=0:10,50:5 per=server source=\"s\"\n", 1, "must not fall"},
    {"curve \"A\" load=0:10,150:20 per=server source=\"s\"\n", 1, "out of range"},
    {"curve \"A\" load=0:10,100:20 per=rack source=\"s\"\n", 1, "per=rack"},
    {"curve \"A\" load=0:1,9:2 per=vcpu source=\"s\"\n"
     "curve \"a\" load=0:1,9:2 per=vcpu source=\"s\"\n",
     2, "duplicate curve record"},
    {"cpu A tdp=1 mhz=1 source=\"s\"\n", 1, "quoted"},
    {"cpu \"A tdp=1 mhz=1\n", 1, "closing quote"},
    {"cpu \"A\" tdp=1 mhz=1 tpd=3 source=\"s\"\n", 1, "unknown cpu key 'tpd'"},
    {"\n\ncpu \"A\" mhz=1 source=\"s\"\n", 3, "needs tdp="},
    {"cpu \"A\" tdp=1 mhz=1\n", 1, "source="},
    {"cpu \"A\" tdp=1 mhz=1 source=\"\"\n", 1, "source is empty"},
    {"cpu \"A\" tdp=lots mhz=1 source=\"s\"\n", 1, "tdp=lots is not a number"},
    {"cpu \"A\" tdp=-4 mhz=1 source=\"s\"\n", 1, "out of range"},
    {"cpu \"A\" tdp=1 tdp=2 mhz=1 source=\"s\"\n", 1, "tdp given twice"},
    {"cpu \"A\" tdp=1 mhz=1 threads=2.5 source=\"s\"\n", 1, "whole number"},
    {"cpu \"A\" tdp=1 mhz=1 volt=800:1.1,600:0.9 source=\"s\"\n", 1, "increasing"},
    {"cpu \"A\" tdp=1 mhz=1 volt=800 source=\"s\"\n", 1, "MHZ:VOLTS"},
    {"cpu \"A\" tdp=1 mhz=1 volt=800:1.1, source=\"s\"\n", 1, "trailing"},
    {"cpu \"  \" tdp=1 mhz=1 source=\"s\"\n", 1, "empty cpu match"},
    {"cpu \"A\" tdp=1 mhz=1 source=\"s\"\ncpu \"a\" tdp=2 mhz=1 "
     "source=\"s\"\n",
     2, "duplicate cpu record"},
    {"nic \"x\" idle=1 source=\"s\"\n", 1, "needs state="},
    {"nic \"x\" state=1000:2,100:1 source=\"s\"\n", 1, "increasing"},
    {"nic \"x\" state=100:1 speed=3 source=\"s\"\n", 1, "unknown nic key"},
    {"cpu \"A\" tdp=1 mhz=1 source=\"s\"junk\n", 1, "blank after"},
    {"cpu \"A\" tdp= mhz=1 source=\"s\"\n", 1, "has no value"},
};

START_TEST(test_parse_errors)
{
    char *dir;
    char *path = tmp_hwdb(&dir, bad[_i].text);
    pa_hwdb_cpu c;
    pa_hwdb_nic n;
    /* the whole file is checked whatever is looked up */
    int rc = pa__hwdb_cpu(path, "A", &c);
    ck_assert_int_eq(rc, -EINVAL);
    char where[4200];
    snprintf(where, sizeof(where), "%s:%u:", path, bad[_i].line);
    ck_assert_msg(strstr(pa_last_error(), where) != NULL, "case %d: '%s' lacks '%s'", _i,
                  pa_last_error(), where);
    ck_assert_msg(strstr(pa_last_error(), bad[_i].says) != NULL, "case %d: '%s' lacks '%s'", _i,
                  pa_last_error(), bad[_i].says);
    ck_assert_int_eq(pa__hwdb_nic(path, "x", &n), -EINVAL);
    free(path);
    pa_test_rmtree(dir);
}
END_TEST

START_TEST(test_long_line)
{
    char *dir = pa_test_tmpdir();
    char line[2100];
    memset(line, ' ', sizeof(line) - 2);
    memcpy(line, "# ", 2);
    line[sizeof(line) - 2] = '\n';
    line[sizeof(line) - 1] = '\0';
    pa_test_write(dir, "hwdb.txt", "%s", line);
    char path[4200];
    snprintf(path, sizeof(path), "%s/hwdb.txt", dir);
    pa_hwdb_cpu c;
    ck_assert_int_eq(pa__hwdb_cpu(path, "A", &c), -EINVAL);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), ":1: line longer"));
    pa_test_rmtree(dir);
}
END_TEST

START_TEST(test_missing_file_and_default_path)
{
    pa_hwdb_cpu c;
    int rc = pa__hwdb_cpu("/nonexistent/hwdb.txt", "Q6600", &c);
    ck_assert_int_eq(rc, -ENOENT);
    ck_assert_ptr_nonnull(strstr(pa_last_error(), "cannot open"));
    /* NULL: the installed file if readable, else the source tree's */
    const char *p = pa__hwdb_path(NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(pa__hwdb_path("/some/file"), "/some/file");
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(pa__hwdb_cpu(NULL, Q6600_NAME, &c), 0);
    ck_assert_str_eq(c.match, "Q6600");
}
END_TEST

START_TEST(test_parse_volt)
{
    pa_hwdb_cpu c;
    char why[160];
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(pa__hwdb_parse_volt("800:0.75+3200:1.1", &c, why, sizeof(why)), 0);
    ck_assert_uint_eq(c.nvolt, 2);
    ck_assert_double_eq(c.volt[1].mhz, 3200);
    ck_assert_double_eq(c.volt[1].volt, 1.1);
    ck_assert_int_eq(pa__hwdb_parse_volt("800:0.75+800:1.1", &c, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "increasing"));
    ck_assert_int_eq(pa__hwdb_parse_volt("800:9", &c, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "out of range"));
    ck_assert_int_eq(pa__hwdb_parse_volt("", &c, why, sizeof(why)), -EINVAL);
    char many[512] = "";
    for (int i = 1; i <= 17; i++) {
        size_t u = strlen(many);
        snprintf(many + u, sizeof(many) - u, "%s%d:1", i > 1 ? "+" : "", i * 100);
    }
    ck_assert_int_eq(pa__hwdb_parse_volt(many, &c, why, sizeof(why)), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "more than 16"));
    /* c kept the last good table */
    ck_assert_uint_eq(c.nvolt, 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("hwdb");
    TCase *tc = tcase_create("hwdb");
    tcase_add_test(tc, test_papers_cpus);
    tcase_add_test(tc, test_voltage_table);
    tcase_add_test(tc, test_current_parts);
    tcase_add_test(tc, test_word_boundaries_and_versions);
    tcase_add_test(tc, test_generic_vm_names_unknown);
    tcase_add_test(tc, test_default_reasoning_holds);
    tcase_add_test(tc, test_nics);
    tcase_add_test(tc, test_format_features);
    tcase_add_test(tc, test_curves);
    tcase_add_loop_test(tc, test_parse_errors, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_long_line);
    tcase_add_test(tc, test_missing_file_and_default_path);
    tcase_add_test(tc, test_parse_volt);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pa_test_main(suite());
}
