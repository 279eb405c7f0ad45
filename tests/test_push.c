/* test_push.c - cli/push.c, the sending thread of --otlp and --push, with a
 * receiver of this process (libmicrohttpd) on loopback: the order of the
 * batches, a full queue dropping the oldest and counting them, a queue of
 * one while its batch is being sent, and the spool folder (batches kept at
 * exit, sent in order by the next start, once). */
#include "push.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

typedef struct recv_state {
    pthread_mutex_t lock;
    char bodies[64][32]; /* what each request held, in order */
    int n;
    int delay_ms; /* before answering */
} recv_state;

static recv_state rs;

typedef struct conn {
    char body[32];
    size_t len;
} conn;

static enum MHD_Result on_req(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **state)
{
    (void)cls, (void)url, (void)method, (void)version;
    conn *k = *state;
    if (!k) {
        *state = calloc(1, sizeof(conn));
        return *state ? MHD_YES : MHD_NO;
    }
    if (*size) {
        size_t room = sizeof(k->body) - 1 - k->len, n = *size < room ? *size : room;
        memcpy(k->body + k->len, data, n);
        k->len += n;
        *size = 0;
        return MHD_YES;
    }
    if (rs.delay_ms)
        usleep((useconds_t)rs.delay_ms * 1000);
    pthread_mutex_lock(&rs.lock);
    if (rs.n < 64)
        snprintf(rs.bodies[rs.n++], sizeof(rs.bodies[0]), "%s", k->body);
    pthread_mutex_unlock(&rs.lock);
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **state,
                    enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    free(*state);
    *state = NULL;
}

static struct MHD_Daemon *receiver(unsigned port)
{
    memset(rs.bodies, 0, sizeof(rs.bodies));
    rs.n = 0;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, on_req,
        NULL, MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
    ck_assert_ptr_nonnull(d);
    return d;
}

static void submit(rp_push *p, const char *text)
{
    ck_assert_int_eq(rp_push_submit(p, strdup(text), strlen(text), NULL), 0);
}

static void wait_sent(rp_push *p, uint64_t n)
{
    rp_push_stats st;
    for (int i = 0; i < 500; i++) {
        rp_push_get_stats(p, &st);
        if (st.sent >= n)
            return;
        usleep(10000);
    }
    ck_abort_msg("%llu sent of %llu", (unsigned long long)st.sent, (unsigned long long)n);
}

static size_t files_in(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".push") && !strstr(e->d_name, ".tmp");
    if (d)
        closedir(d);
    return n;
}

/* Nobody listens: a queue of 3 keeps the newest 3 of 10, counts 7. */
START_TEST(test_overflow)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", pa_test_free_port());
    rp_push_cfg cfg = {.cmd = "test", .name = "push", .url = url, .queue_max = 3};
    rp_push *p;
    ck_assert_int_eq(rp_push_start(&cfg, &p), 0);
    char text[16];
    for (int i = 0; i < 10; i++) {
        snprintf(text, sizeof(text), "b%d", i);
        submit(p, text);
    }
    rp_push_stats st;
    rp_push_get_stats(p, &st);
    ck_assert_uint_eq(st.submitted, 10);
    ck_assert_uint_eq(st.dropped, 7);
    ck_assert_uint_eq(st.queued, 3);
    rp_push_stop(p, 0);
}
END_TEST

/* A receiver that takes 300 ms an answer and a queue of one: batches
 * arrive while the one in flight is sent; it is never the one dropped. */
START_TEST(test_queue_of_one)
{
    unsigned port = pa_test_free_port();
    struct MHD_Daemon *d = receiver(port);
    rs.delay_ms = 300;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", port);
    rp_push_cfg cfg = {.cmd = "test", .name = "push", .url = url, .queue_max = 1};
    rp_push *p;
    ck_assert_int_eq(rp_push_start(&cfg, &p), 0);
    submit(p, "first");
    usleep(100000); /* in flight now */
    submit(p, "second");
    submit(p, "third");
    wait_sent(p, 1);
    rp_push_stats st;
    rp_push_get_stats(p, &st);
    ck_assert_uint_eq(st.dropped, 2);
    rp_push_stop(p, 2000000000ull);
    rs.delay_ms = 0;
    MHD_stop_daemon(d);
    ck_assert_int_ge(rs.n, 1);
    ck_assert_str_eq(rs.bodies[0], "first");
}
END_TEST

/* Batches kept in the spool at exit are sent, in order and once, by the
 * next start with the folder; none is left there. */
START_TEST(test_spool)
{
    char *dir = pa_test_tmpdir();
    char spool[600], url[64];
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    unsigned port = pa_test_free_port();
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", port);
    rp_push_cfg cfg = {.cmd = "test", .name = "push", .url = url, .spool_dir = spool};
    rp_push *p;
    ck_assert_int_eq(rp_push_start(&cfg, &p), 0);
    submit(p, "one");
    submit(p, "two");
    submit(p, "three");
    rp_push_stop(p, 0);
    ck_assert_uint_eq(files_in(spool), 3);
    struct MHD_Daemon *d = receiver(port);
    ck_assert_int_eq(rp_push_start(&cfg, &p), 0);
    submit(p, "four");
    wait_sent(p, 4);
    rp_push_stop(p, 1000000000ull);
    MHD_stop_daemon(d);
    ck_assert_int_eq(rs.n, 4);
    ck_assert_str_eq(rs.bodies[0], "one");
    ck_assert_str_eq(rs.bodies[1], "two");
    ck_assert_str_eq(rs.bodies[2], "three");
    ck_assert_str_eq(rs.bodies[3], "four");
    ck_assert_uint_eq(files_in(spool), 0);
    pa_test_rmtree(dir);
}
END_TEST

int main(void)
{
    pthread_mutex_init(&rs.lock, NULL);
    Suite *s = suite_create("push");
    TCase *tc = tcase_create("push");
    tcase_add_test(tc, test_overflow);
    tcase_add_test(tc, test_queue_of_one);
    tcase_add_test(tc, test_spool);
    suite_add_tcase(s, tc);
    return pa_test_main(s);
}
