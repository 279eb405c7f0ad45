/*
 * push.c - batches to an HTTP receiver on a thread of their own (push.h).
 *
 * The queue is a ring of at most queue_max batches under one mutex that
 * is never held across a request: rp_push_submit only appends (or drops
 * the oldest batch not in flight), so the measuring thread that calls it
 * never waits on the network.  The thread sends the oldest batch; a
 * refused connection, a timeout, 408, 429, 502, 503 or 504 keep it at the
 * head and retry after a delay that doubles from backoff_ns up to
 * backoff_max_ns (OTLP/HTTP's retryable answers); any other answer but
 * 2xx drops it for good (counted as rejected).  A batch is removed only
 * once sent, so a receiver that goes away and comes back gets every batch
 * the queue could hold, in order.
 */
#include "push.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

typedef struct batch {
    void *body;
    size_t len;
    char *url;  /* NULL: the configuration's */
    char *file; /* its copy in the spool folder, or NULL */
} batch;

struct rp_push {
    rp_push_cfg cfg; /* strings owned */
    char **headers;
    pthread_t th;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* work for the thread, or a change for stop */
    batch *q;            /* ring of cfg.queue_max */
    size_t head, count;
    int in_flight; /* the head is being sent */
    int stop;
    rp_push_stats st;
    long last_fail; /* the last failure: curl code, or -HTTP status; 0 none */
    long said[8];   /* the failures said since the last delivery */
    int spool_lock; /* the spool folder's .lock, held while running; -1 */
    size_t nsaid;
    int spool_failed;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Frees b; its spool file goes too, unless keep. */
static void batch_drop(batch *b, bool keep)
{
    if (b->file && !keep)
        unlink(b->file);
    free(b->file);
    free(b->body);
    free(b->url);
    memset(b, 0, sizeof(*b));
}

/* gzip (RFC 1952) of in: a malloc'd buffer, or NULL. */
static void *gzip_of(const void *in, size_t len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *out = malloc(cap);
    if (out) {
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)len;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
            free(out);
            out = NULL;
        } else {
            *out_len = z.total_out;
        }
    }
    deflateEnd(&z);
    return out;
}

typedef struct answer {
    char text[256]; /* the start of the receiver's body, for messages */
    size_t len;
} answer;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    answer *a = user;
    size_t len = size * n, room = sizeof(a->text) - 1 - a->len;
    size_t k = len < room ? len : room;
    memcpy(a->text + a->len, data, k);
    a->len += k;
    a->text[a->len] = '\0';
    return len;
}

/* Why a curl error happened, and what to do, in words. */
static const char *curl_why(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
        return "connection refused: is the receiver running and listening there?";
    case CURLE_COULDNT_RESOLVE_HOST:
        return "unknown host name";
    case CURLE_OPERATION_TIMEDOUT:
        return "no answer in time: the receiver hangs or is overloaded";
    case CURLE_SSL_CONNECT_ERROR:
        return "TLS handshake failed: an https:// URL to a plain-HTTP receiver? (use http://)";
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        return "the receiver closed the connection without an answer (TLS to it, or it "
               "crashed?)";
    case CURLE_UNSUPPORTED_PROTOCOL:
        return "not an http:// or https:// URL";
    default:
        return "";
    }
}

/* Aborts a request in progress when rp_push_stop gives up waiting. */
static int on_progress(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return __atomic_load_n(&((rp_push *)user)->stop, __ATOMIC_ACQUIRE) > 1;
}

/* One request.  Returns 1 sent, 0 retry later, -1 refused for good;
 * *fail says what happened (a curl code, or -HTTP status). */
static int send_one(rp_push *p, CURL *h, const batch *b, long *fail, char *msg, size_t msglen)
{
    const void *body = b->body;
    size_t len = b->len;
    void *gz = NULL;
    if (p->cfg.gzip && (gz = gzip_of(b->body, b->len, &len)) != NULL)
        body = gz;
    else
        len = b->len;
    struct curl_slist *hl = NULL;
    char ct[160];
    snprintf(ct, sizeof(ct), "Content-Type: %s", p->cfg.content_type);
    hl = curl_slist_append(hl, ct);
    if (gz)
        hl = curl_slist_append(hl, "Content-Encoding: gzip");
    hl = curl_slist_append(hl, "Expect:");
    for (size_t i = 0; i < p->cfg.nheaders; i++)
        hl = curl_slist_append(hl, p->headers[i]);
    answer a = {.len = 0};
    curl_easy_setopt(h, CURLOPT_URL, b->url ? b->url : p->cfg.url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(p->cfg.timeout_ns / 1000000ull));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(p->cfg.timeout_ns / 1000000ull));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, p);
    CURLcode c = curl_easy_perform(h);
    curl_slist_free_all(hl);
    free(gz);
    if (c != CURLE_OK) {
        *fail = (long)c;
        snprintf(msg, msglen, "%s (%s)", curl_easy_strerror(c), curl_why(c));
        return 0;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return 1;
    *fail = -status;
    for (char *s = a.text; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
    while (a.len && a.text[a.len - 1] == ' ')
        a.text[--a.len] = '\0';
    int retry = status == 408 || status == 429 || status == 502 || status == 503 || status == 504;
    snprintf(msg, msglen, "HTTP %ld%s%s (%s)", status, a.len ? ": " : "", a.text,
             retry           ? "the receiver is busy or away; retrying"
             : status == 404 ? "wrong URL path? OTLP metrics go to /v1/metrics; batch dropped"
             : status == 401 || status == 403
                 ? "authentication: give the receiver's header with the -header option; batch "
                   "dropped"
             : status < 500 ? "the receiver refused the batch; dropped"
                            : "the receiver failed on the batch; dropped, not retried");
    return retry ? 0 : -1;
}

/* The head batch's outcome, under the lock: removes it or schedules the
 * next try; says what changed, once per kind. */
static void settle(rp_push *p, int rc, long fail, const char *msg, uint64_t *backoff,
                   uint64_t *next_try)
{
    p->in_flight = 0;
    if (rc != 0) {
        batch_drop(&p->q[p->head], false);
        p->head = (p->head + 1) % p->cfg.queue_max;
        p->count--;
    }
    if (rc == 1) {
        p->st.sent++;
        if (p->last_fail)
            fprintf(stderr, "%s %s: %s: %s: delivering again (%zu batches queued)\n", p->cfg.prog,
                    p->cfg.cmd, p->cfg.name, p->cfg.url, p->count);
        p->last_fail = 0;
        p->nsaid = 0;
        *backoff = p->cfg.backoff_ns;
        *next_try = 0;
        return;
    }
    if (rc < 0)
        p->st.rejected++;
    else
        p->st.retries++;
    if (fail == CURLE_ABORTED_BY_CALLBACK) /* rp_push_stop gave up on it */
        return;
    size_t k = 0; /* each kind of failure said once until delivery resumes */
    while (k < p->nsaid && p->said[k] != fail)
        k++;
    if (k == p->nsaid) {
        fprintf(stderr, "%s %s: %s: %s: %s\n", p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.url,
                msg);
        if (p->nsaid < sizeof(p->said) / sizeof(p->said[0]))
            p->said[p->nsaid++] = fail;
    }
    p->last_fail = fail;
    if (rc == 0) {
        *next_try = now_ns() + *backoff;
        *backoff = *backoff * 2 > p->cfg.backoff_max_ns ? p->cfg.backoff_max_ns : *backoff * 2;
    }
}

static void wait_until(rp_push *p, uint64_t mono_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(mono_ns / 1000000000ull),
                          .tv_nsec = (long)(mono_ns % 1000000000ull)};
    pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

static void *push_thread(void *arg)
{
    rp_push *p = arg;
    CURL *h = curl_easy_init();
    uint64_t backoff = p->cfg.backoff_ns, next_try = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->stop && (p->count == 0 || p->stop > 1))
            break;
        if (p->count == 0) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        if (next_try && now_ns() < next_try) {
            wait_until(p, next_try);
            continue;
        }
        batch b = p->q[p->head]; /* stays owned by the queue: in flight */
        p->in_flight = 1;
        pthread_mutex_unlock(&p->lock);
        long fail = 0;
        char msg[512] = "";
        int rc = h ? send_one(p, h, &b, &fail, msg, sizeof(msg)) : 0;
        pthread_mutex_lock(&p->lock);
        settle(p, rc, fail, msg, &backoff, &next_try);
        pthread_cond_broadcast(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
    curl_easy_cleanup(h);
    return NULL;
}

/* Keeps a batch in the spool folder: "URL\n" then the body, written under
 * a temporary name and renamed.  Its path, or NULL (said once). */
static char *spool_write(rp_push *p, const void *body, size_t len, const char *url)
{
    if (!p->cfg.spool_dir)
        return NULL;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char *path = NULL, tmp[4200];
    if (asprintf(&path, "%s/%020llu.%09ld.push", p->cfg.spool_dir, (unsigned long long)ts.tv_sec,
                 ts.tv_nsec) < 0)
        return NULL;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    const char *u = url ? url : p->cfg.url;
    FILE *f = fopen(tmp, "w");
    int ok = f && fprintf(f, "%s\n", u) > 0 && fwrite(body, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) < 0) {
        if (!p->spool_failed++)
            fprintf(stderr, "%s %s: %s: cannot keep batches in %s: %s (kept in memory only)\n",
                    p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.spool_dir, strerror(errno));
        unlink(tmp);
        free(path);
        return NULL;
    }
    return path;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The batches a previous run left in the spool folder, oldest first, into
 * the queue (the oldest beyond its size dropped and counted). */
static void spool_load(rp_push *p)
{
    /* Two runs on one folder would both send what an earlier run left:
     * the one that holds the lock does, the other only keeps its own. */
    char lock[4200];
    snprintf(lock, sizeof(lock), "%s/.lock", p->cfg.spool_dir);
    p->spool_lock = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (p->spool_lock < 0 || flock(p->spool_lock, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "%s %s: %s: another run uses %s: what it holds is its own to send\n",
                p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.spool_dir);
        return;
    }
    struct dirent **v = NULL;
    int n = scandir(p->cfg.spool_dir, &v, NULL, by_name);
    size_t loaded = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(v[i]->d_name);
        char *path = NULL;
        if (len > 5 && !strcmp(v[i]->d_name + len - 5, ".push") &&
            asprintf(&path, "%s/%s", p->cfg.spool_dir, v[i]->d_name) >= 0) {
            FILE *f = fopen(path, "r");
            char *url = NULL, *body = NULL;
            size_t cap = 0, blen = 0;
            ssize_t ul = f ? getline(&url, &cap, f) : -1;
            struct stat stt;
            if (ul > 1 && fstat(fileno(f), &stt) == 0 && (body = malloc((size_t)stt.st_size + 1)))
                blen = fread(body, 1, (size_t)stt.st_size, f);
            if (f)
                fclose(f);
            if (ul > 1 && body) {
                url[ul - 1] = '\0';
                if (p->count == p->cfg.queue_max) {
                    batch_drop(&p->q[p->head], false);
                    p->head = (p->head + 1) % p->cfg.queue_max;
                    p->count--;
                    p->st.dropped++;
                }
                p->q[(p->head + p->count++) % p->cfg.queue_max] =
                    (batch){.body = body, .len = blen, .url = url, .file = path};
                loaded++;
                path = NULL;
                url = body = NULL;
            }
            free(url);
            free(body);
        }
        free(path);
        free(v[i]);
    }
    free(v);
    if (loaded)
        fprintf(stderr,
                "%s %s: %s: %zu batches of an earlier run found in %s: sending them first\n",
                p->cfg.prog, p->cfg.cmd, p->cfg.name, loaded, p->cfg.spool_dir);
}

static void curl_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int rp_push_start(const rp_push_cfg *cfg, rp_push **out)
{
    if (!cfg->url || !*cfg->url)
        return -EINVAL;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init);
    rp_push *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->spool_lock = -1;
    p->cfg = *cfg;
    p->cfg.queue_max = cfg->queue_max ? cfg->queue_max : 64;
    p->cfg.timeout_ns = cfg->timeout_ns ? cfg->timeout_ns : 10000000000ull;
    p->cfg.backoff_ns = cfg->backoff_ns ? cfg->backoff_ns : 100000000ull;
    p->cfg.backoff_max_ns = cfg->backoff_max_ns ? cfg->backoff_max_ns : 2000000000ull;
    p->cfg.prog = dup_or_null(cfg->prog ? cfg->prog : "powerapi");
    p->cfg.cmd = dup_or_null(cfg->cmd ? cfg->cmd : "push");
    p->cfg.name = dup_or_null(cfg->name ? cfg->name : "push");
    p->cfg.url = dup_or_null(cfg->url);
    p->cfg.spool_dir = dup_or_null(cfg->spool_dir);
    p->cfg.content_type =
        dup_or_null(cfg->content_type ? cfg->content_type : "application/octet-stream");
    p->headers = calloc(cfg->nheaders + 1, sizeof(char *));
    p->q = calloc(p->cfg.queue_max, sizeof(batch));
    int bad = !p->cfg.prog || !p->cfg.cmd || !p->cfg.name || !p->cfg.url || !p->cfg.content_type ||
              !p->headers || !p->q;
    for (size_t i = 0; !bad && i < cfg->nheaders; i++)
        bad = !(p->headers[i] = strdup(cfg->headers[i]));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->lock, NULL);
    if (!bad && p->cfg.spool_dir) {
        if (mkdir(p->cfg.spool_dir, 0700) < 0 && errno != EEXIST)
            fprintf(stderr, "%s %s: %s: cannot make %s: %s (batches kept in memory only)\n",
                    p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.spool_dir, strerror(errno));
        else
            spool_load(p);
    }
    int rc = bad ? ENOMEM : pthread_create(&p->th, NULL, push_thread, p);
    if (rc) {
        p->cfg.queue_max = 0; /* no thread to join */
        rp_push_stop(p, 0);
        return -rc;
    }
    *out = p;
    return 0;
}

int rp_push_submit(rp_push *p, void *body, size_t len, const char *url)
{
    char *u = url ? strdup(url) : NULL;
    if (url && !u) {
        free(body);
        return -ENOMEM;
    }
    pthread_mutex_lock(&p->lock);
    p->st.submitted++;
    if (p->count == 1 && p->cfg.queue_max == 1 && p->in_flight) {
        /* a queue of one, being sent: the new batch is the one dropped */
        p->st.dropped++;
        pthread_mutex_unlock(&p->lock);
        free(body);
        free(u);
        return 0;
    }
    if (p->count == p->cfg.queue_max) {
        /* drop the oldest not in flight: the head, or the one after it */
        size_t victim = (p->head + (p->in_flight ? 1 : 0)) % p->cfg.queue_max;
        batch_drop(&p->q[victim], false);
        if (p->in_flight) { /* close the gap: the head's batch moves forward */
            p->q[victim] = p->q[p->head];
            memset(&p->q[p->head], 0, sizeof(batch));
        }
        p->head = (p->head + 1) % p->cfg.queue_max;
        p->count--;
        if (p->st.dropped++ == 0)
            fprintf(stderr,
                    "%s %s: %s: queue full (%zu batches): dropping the oldest (counted in "
                    "powerapi.otlp.dropped_batches)\n",
                    p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.queue_max);
    }
    size_t tail = (p->head + p->count) % p->cfg.queue_max;
    p->q[tail] = (batch){.body = body, .len = len, .url = u, .file = spool_write(p, body, len, u)};
    p->count++;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void rp_push_get_stats(rp_push *p, rp_push_stats *st)
{
    pthread_mutex_lock(&p->lock);
    *st = p->st;
    st->queued = p->count;
    pthread_mutex_unlock(&p->lock);
}

void rp_push_stop(rp_push *p, uint64_t flush_ns)
{
    if (!p)
        return;
    if (p->cfg.queue_max) {
        uint64_t end = now_ns() + flush_ns;
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        pthread_cond_broadcast(&p->cond);
        while (p->count && (p->in_flight || !p->last_fail) && now_ns() < end)
            wait_until(p, end);
        __atomic_store_n(&p->stop, 2, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->th, NULL);
        size_t kept = 0;
        for (size_t i = 0; i < p->count; i++)
            kept += p->q[(p->head + i) % p->cfg.queue_max].file != NULL;
        if (kept)
            fprintf(stderr,
                    "%s %s: %s: %s: %zu batches not delivered, kept in %s: the next run "
                    "with this folder sends them\n",
                    p->cfg.prog, p->cfg.cmd, p->cfg.name, p->cfg.url, kept, p->cfg.spool_dir);
        if (p->count > kept)
            fprintf(stderr, "%s %s: %s: %s: %zu batches not delivered at exit\n", p->cfg.prog,
                    p->cfg.cmd, p->cfg.name, p->cfg.url, p->count - kept);
        for (size_t i = 0; i < p->count; i++)
            batch_drop(&p->q[(p->head + i) % p->cfg.queue_max], true);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
    }
    for (size_t i = 0; p->headers && p->headers[i]; i++)
        free(p->headers[i]);
    free(p->headers);
    free(p->q);
    free((char *)p->cfg.prog);
    free((char *)p->cfg.cmd);
    free((char *)p->cfg.name);
    free((char *)p->cfg.url);
    free((char *)p->cfg.spool_dir);
    if (p->spool_lock >= 0)
        close(p->spool_lock); /* and its lock */
    free((char *)p->cfg.content_type);
    free(p);
}
