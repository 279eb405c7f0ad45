/*
 * wall_http.c - the HTTP side of the wall meters (issue 46; DESIGN.md
 * section 19): GET with libcurl, loaded with dlopen at the first request
 * (libpowerapi does not link it; the header gives its constants), and the
 * poller thread that redfish and http-meter read their latest reading
 * from, so that a slow BMC never stalls the tick.
 */
#include "wall.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- libcurl, loaded once ---- */

static struct {
    CURLcode (*global_init)(long);
    CURL *(*init)(void);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*perform)(CURL *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    void (*cleanup)(CURL *);
    const char *(*strerror)(CURLcode);
    int ok;
    char why[160];
} curl;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_load(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(curl.why, sizeof(curl.why),
                 "libcurl.so.4 not found (%s): install libcurl4 (Debian) to read an HTTP meter",
                 dlerror());
        return;
    }
    *(void **)&curl.global_init = dlsym(h, "curl_global_init");
    *(void **)&curl.init = dlsym(h, "curl_easy_init");
    *(void **)&curl.setopt = dlsym(h, "curl_easy_setopt");
    *(void **)&curl.perform = dlsym(h, "curl_easy_perform");
    *(void **)&curl.getinfo = dlsym(h, "curl_easy_getinfo");
    *(void **)&curl.cleanup = dlsym(h, "curl_easy_cleanup");
    *(void **)&curl.strerror = dlsym(h, "curl_easy_strerror");
    if (!curl.global_init || !curl.init || !curl.setopt || !curl.perform || !curl.getinfo ||
        !curl.cleanup || !curl.strerror) {
        snprintf(curl.why, sizeof(curl.why), "libcurl.so.4 lacks curl_easy_* calls");
        return;
    }
    curl.ok = curl.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    if (!curl.ok)
        snprintf(curl.why, sizeof(curl.why), "curl_global_init failed");
}

typedef struct body_buf {
    char *p;
    size_t n;
} body_buf;

#define BODY_MAX (4u << 20) /* a Redfish resource is a few KiB */

static size_t body_write(char *data, size_t size, size_t nmemb, void *user)
{
    body_buf *b = user;
    size_t add = size * nmemb;
    if (b->n + add > BODY_MAX)
        return 0;
    char *p = realloc(b->p, b->n + add + 1);
    if (!p)
        return 0;
    memcpy(p + b->n, data, add);
    b->p = p;
    b->n += add;
    p[b->n] = '\0';
    return add;
}

/* The cause and fix of an HTTP status, or NULL for 2xx. */
static const char *status_cause(long st)
{
    if (st >= 200 && st < 300)
        return NULL;
    if (st == 401 || st == 403)
        return "wrong or missing credentials: check the credentials file (user:password)";
    if (st == 404)
        return "no such resource: check url= (and resource=)";
    if (st == 429 || st == 503)
        return "the service asks to poll less often: raise period=";
    return "the service refused the request";
}

int pa_wall_http_get(const pa_wall_http *h, const char *url, char **body, size_t *len, char *err,
                     size_t errlen)
{
    pthread_once(&curl_once, curl_load);
    if (!curl.ok) {
        snprintf(err, errlen, "%s", curl.why);
        return -ENOSYS;
    }
    CURL *c = curl.init();
    if (!c) {
        snprintf(err, errlen, "%s: curl_easy_init failed", url);
        return -ENOMEM;
    }
    body_buf b = {NULL, 0};
    long ms = (long)(h->timeout_s * 1000);
    curl.setopt(c, CURLOPT_URL, url);
    curl.setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl.setopt(c, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 2000L);
    curl.setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 2000L);
    curl.setopt(c, CURLOPT_WRITEFUNCTION, body_write);
    curl.setopt(c, CURLOPT_WRITEDATA, &b);
    curl.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (h->cacert[0])
        curl.setopt(c, CURLOPT_CAINFO, h->cacert);
    if (h->insecure) {
        curl.setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl.setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (h->userpwd[0]) {
        curl.setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl.setopt(c, CURLOPT_USERPWD, h->userpwd);
    }
    CURLcode rc = curl.perform(c);
    long st = 0;
    curl.getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    curl.cleanup(c);
    int ret = 0;
    if (rc != CURLE_OK) {
        const char *fix = rc == CURLE_OPERATION_TIMEDOUT ? " (raise timeout=, or check the host)"
                          : rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE
                              ? " (give the service's CA with cacert=FILE, or insecure=1)"
                              : "";
        snprintf(err, errlen, "%s: %s%s", url, curl.strerror(rc), fix);
        ret = rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
    } else if (status_cause(st)) {
        snprintf(err, errlen, "%s: HTTP %ld: %s", url, st, status_cause(st));
        ret = st == 401 || st == 403 ? -EACCES : -EIO;
    }
    if (ret < 0 || !b.p) {
        free(b.p);
        if (ret == 0)
            snprintf(err, errlen, "%s: empty answer", url);
        return ret < 0 ? ret : -ENODATA;
    }
    *body = b.p;
    *len = b.n;
    return 0;
}

int pa_wall_credentials_read(const char *path, char *out, size_t outlen, char *why, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        snprintf(why, len, "credentials file %s: %s", path, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    if (st.st_mode & 077) {
        close(fd);
        snprintf(why, len,
                 "credentials file %s is open to group or others (mode %03o): chmod 600 %s", path,
                 (unsigned)(st.st_mode & 0777), path);
        return -EPERM;
    }
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!strchr(buf, ':') || strlen(buf) >= outlen) {
        snprintf(why, len, "credentials file %s: write one line user:password", path);
        return -EINVAL;
    }
    snprintf(out, outlen, "%s", buf);
    return 0;
}

/* ---- the poller ---- */

struct pa_wall_poller {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    double period_s;
    pa_wall_poll_fn fn;
    void *user;
    /* the latest reading, guarded by lock */
    pa_wall_reading last;
    uint64_t last_ns; /* CLOCK_MONOTONIC when it arrived, 0 none */
    int last_rc;
    char err[256];
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *poller_main(void *arg)
{
    pa_wall_poller *p = arg;
    int fails = 0;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        pthread_mutex_unlock(&p->lock);
        pa_wall_reading r;
        char err[256] = "";
        memset(&r, 0, sizeof(r));
        uint64_t t0 = mono_ns();
        int rc = p->fn(p->user, &r, err, sizeof(err));
        uint64_t t1 = mono_ns();
        pthread_mutex_lock(&p->lock);
        p->last_rc = rc;
        snprintf(p->err, sizeof(p->err), "%s", rc < 0 ? err : "");
        if (rc == 0) {
            /* the answer stands for the middle of the request */
            r.seq = p->last.seq + 1;
            p->last = r;
            p->last_ns = t0 + (t1 - t0) / 2;
        }
        fails = rc < 0 ? (fails < 3 ? fails + 1 : 3) : 0;
        double wait_s = p->period_s * (double)(1u << fails); /* up to 8 times */
        uint64_t until = mono_ns() + (uint64_t)(wait_s * 1e9);
        struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
        while (!p->stop && pthread_cond_timedwait(&p->wake, &p->lock, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int pa_wall_poller_start(double period_s, pa_wall_poll_fn fn, void *user, pa_wall_poller **out)
{
    pa_wall_poller *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->period_s = period_s;
    p->fn = fn;
    p->user = user;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&p->thread, NULL, poller_main, p);
    if (rc) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return -rc;
    }
    *out = p;
    return 0;
}

int pa_wall_poller_latest(pa_wall_poller *p, double stale_s, pa_wall_reading *out, char *err,
                          size_t errlen)
{
    pthread_mutex_lock(&p->lock);
    double age = p->last_ns ? (double)(mono_ns() - p->last_ns) * 1e-9 : -1;
    int rc = p->last_ns ? 1 : 0;
    if (p->last_ns) {
        *out = p->last;
        out->age_s = age;
    }
    snprintf(err, errlen, "%s", p->err);
    if (p->last_rc < 0 && (!p->last_ns || age > stale_s))
        rc = p->last_rc;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void pa_wall_poller_stop(pa_wall_poller *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
