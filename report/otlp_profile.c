/*
 * otlp_profile.c - pprof into OTLP profiles (otlp_profile.h).
 *
 * The pprof is unpacked with profcore's generated code and its tables
 * moved into the request's ProfilesDictionary: the string table as it is
 * (both keep "" at 0), and mappings, functions and locations at their pprof
 * id (pprof ids are 1, 2, ...; index 0 of every OTLP table is the zero value
 * the specification requires), one stack per sample.  Each sample type
 * becomes a Profile of its own (OTLP has one sample type a profile), energy
 * first, with the samples whose value is not 0.
 */
#include "otlp_profile.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "pprof.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define P(x) Opentelemetry__Proto__Profiles__V1development__##x
#define PINIT(x) OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__##x##__INIT

typedef Perftools__Profiles__Profile pprof_t;

/* in, gunzipped when it is gzip: a malloc'd buffer, or NULL. */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return NULL;
    size_t cap = len * 4 + 1024, n = 0;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    int rc = Z_OK;
    while (out && rc == Z_OK) {
        if (n == cap) {
            uint8_t *bigger = realloc(out, cap *= 2);
            if (!bigger) {
                free(out);
                out = NULL;
                break;
            }
            out = bigger;
        }
        z.next_out = out + n;
        z.avail_out = (uInt)(cap - n);
        rc = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_len = n;
    return out;
}

/* What the request points into, freed together. */
typedef struct conv {
    const pprof_t *pp;
    P(ProfilesDictionary) dict;
    P(Mapping) * maps;
    P(Function) * funcs;
    P(Location) * locs;
    P(Line) * lines;
    P(Stack) * stacks;
    P(Mapping) * *mapv;
    P(Function) * *funcv;
    P(Location) * *locv;
    P(Line) * *linev;
    P(Stack) * *stackv;
    int32_t *locidx;
    P(Link) link0;
    P(Link) * linkv[1];
    P(KeyValueAndUnit) * attrs; /* [0] the zero value, then each label */
    P(KeyValueAndUnit) * *attrv;
    Opentelemetry__Proto__Common__V1__AnyValue *avals;
    int64_t *astr;  /* each attribute's pprof string */
    int32_t *sattr; /* each sample's attribute (its first label), 0 none */
    size_t nattr;
    uint8_t zero[16];
} conv;

/* An id of pprof as the index of its table (ids are 1..n): 0 when out. */
static int32_t idx(uint64_t id, size_t n)
{
    return id >= 1 && id <= n ? (int32_t)id : 0;
}

static int dict_tables(conv *c)
{
    const pprof_t *pp = c->pp;
    size_t nlines = 0;
    for (size_t i = 0; i < pp->n_location; i++)
        nlines += pp->location[i]->n_line;
    c->maps = calloc(pp->n_mapping + 1, sizeof(*c->maps));
    c->mapv = calloc(pp->n_mapping + 1, sizeof(*c->mapv));
    c->funcs = calloc(pp->n_function + 1, sizeof(*c->funcs));
    c->funcv = calloc(pp->n_function + 1, sizeof(*c->funcv));
    c->locs = calloc(pp->n_location + 1, sizeof(*c->locs));
    c->locv = calloc(pp->n_location + 1, sizeof(*c->locv));
    c->lines = calloc(nlines + 1, sizeof(*c->lines));
    c->linev = calloc(nlines + 1, sizeof(*c->linev));
    if (!c->maps || !c->mapv || !c->funcs || !c->funcv || !c->locs || !c->locv || !c->lines ||
        !c->linev)
        return -ENOMEM;
    for (size_t i = 0; i <= pp->n_mapping; i++) {
        c->maps[i] = (P(Mapping))PINIT(MAPPING);
        c->mapv[i] = &c->maps[i];
        if (i && idx(pp->mapping[i - 1]->id, pp->n_mapping) == (int32_t)i) {
            const Perftools__Profiles__Mapping *m = pp->mapping[i - 1];
            c->maps[i].memory_start = m->memory_start;
            c->maps[i].memory_limit = m->memory_limit;
            c->maps[i].file_offset = m->file_offset;
            c->maps[i].filename_strindex = (int32_t)m->filename;
        }
    }
    for (size_t i = 0; i <= pp->n_function; i++) {
        c->funcs[i] = (P(Function))PINIT(FUNCTION);
        c->funcv[i] = &c->funcs[i];
        if (i && idx(pp->function[i - 1]->id, pp->n_function) == (int32_t)i) {
            const Perftools__Profiles__Function *f = pp->function[i - 1];
            c->funcs[i].name_strindex = (int32_t)f->name;
            c->funcs[i].system_name_strindex = (int32_t)f->system_name;
            c->funcs[i].filename_strindex = (int32_t)f->filename;
            c->funcs[i].start_line = f->start_line;
        }
    }
    size_t ln = 0;
    for (size_t i = 0; i <= pp->n_location; i++) {
        c->locs[i] = (P(Location))PINIT(LOCATION);
        c->locv[i] = &c->locs[i];
        if (!i || idx(pp->location[i - 1]->id, pp->n_location) != (int32_t)i)
            continue;
        const Perftools__Profiles__Location *l = pp->location[i - 1];
        c->locs[i].mapping_index = idx(l->mapping_id, pp->n_mapping);
        c->locs[i].address = l->address;
        c->locs[i].lines = &c->linev[ln];
        c->locs[i].n_lines = l->n_line;
        for (size_t k = 0; k < l->n_line; k++, ln++) {
            c->lines[ln] = (P(Line))PINIT(LINE);
            c->lines[ln].function_index = idx(l->line[k]->function_id, pp->n_function);
            c->lines[ln].line = l->line[k]->line;
            c->linev[ln] = &c->lines[ln];
        }
    }
    return 0;
}

/* The attribute of a sample's first string label (the scope it was taken
 * in: pprof's label scope=NAME), added to the table the first time: its
 * index, 0 when none. */
static int32_t label_attr(conv *c, const Perftools__Profiles__Sample *s)
{
    const pprof_t *pp = c->pp;
    if (!s->n_label || !s->label[0]->str || (size_t)s->label[0]->str >= pp->n_string_table ||
        (size_t)s->label[0]->key >= pp->n_string_table)
        return 0;
    for (size_t a = 1; a < c->nattr; a++)
        if (c->attrs[a].key_strindex == (int32_t)s->label[0]->key && c->astr[a] == s->label[0]->str)
            return (int32_t)a;
    size_t a = c->nattr++;
    c->attrs[a] = (P(KeyValueAndUnit))PINIT(KEY_VALUE_AND_UNIT);
    c->attrs[a].key_strindex = (int32_t)s->label[0]->key;
    c->avals[a] = (Opentelemetry__Proto__Common__V1__AnyValue)
        OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
    c->avals[a].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
    c->avals[a].string_value = pp->string_table[s->label[0]->str];
    c->attrs[a].value = &c->avals[a];
    c->astr[a] = s->label[0]->str;
    c->attrv[a] = &c->attrs[a];
    return (int32_t)a;
}

/* One stack per sample (index i + 1), the sample's attribute, and the
 * zero values of the tables this file does not fill. */
static int dict_stacks(conv *c)
{
    const pprof_t *pp = c->pp;
    size_t nloc = 0;
    for (size_t i = 0; i < pp->n_sample; i++)
        nloc += pp->sample[i]->n_location_id;
    c->stacks = calloc(pp->n_sample + 1, sizeof(*c->stacks));
    c->stackv = calloc(pp->n_sample + 1, sizeof(*c->stackv));
    c->locidx = calloc(nloc + 1, sizeof(*c->locidx));
    if (!c->stacks || !c->stackv || !c->locidx)
        return -ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i <= pp->n_sample; i++) {
        c->stacks[i] = (P(Stack))PINIT(STACK);
        c->stackv[i] = &c->stacks[i];
        if (!i)
            continue;
        const Perftools__Profiles__Sample *s = pp->sample[i - 1];
        c->stacks[i].location_indices = &c->locidx[at];
        c->stacks[i].n_location_indices = s->n_location_id;
        for (size_t k = 0; k < s->n_location_id; k++)
            c->locidx[at++] = idx(s->location_id[k], pp->n_location);
    }
    c->link0 = (P(Link))PINIT(LINK);
    c->link0.trace_id = (ProtobufCBinaryData){16, c->zero};
    c->link0.span_id = (ProtobufCBinaryData){8, c->zero};
    c->linkv[0] = &c->link0;
    c->attrs = calloc(pp->n_sample + 1, sizeof(*c->attrs));
    c->attrv = calloc(pp->n_sample + 1, sizeof(*c->attrv));
    c->avals = calloc(pp->n_sample + 1, sizeof(*c->avals));
    c->astr = calloc(pp->n_sample + 1, sizeof(*c->astr));
    c->sattr = calloc(pp->n_sample + 1, sizeof(*c->sattr));
    if (!c->attrs || !c->attrv || !c->avals || !c->astr || !c->sattr)
        return -ENOMEM;
    c->attrs[0] = (P(KeyValueAndUnit))PINIT(KEY_VALUE_AND_UNIT);
    c->attrv[0] = &c->attrs[0];
    c->nattr = 1;
    for (size_t i = 0; i < pp->n_sample; i++)
        c->sattr[i] = label_attr(c, pp->sample[i]);
    c->dict = (P(ProfilesDictionary))PINIT(PROFILES_DICTIONARY);
    c->dict.mapping_table = c->mapv;
    c->dict.n_mapping_table = pp->n_mapping + 1;
    c->dict.function_table = c->funcv;
    c->dict.n_function_table = pp->n_function + 1;
    c->dict.location_table = c->locv;
    c->dict.n_location_table = pp->n_location + 1;
    c->dict.stack_table = c->stackv;
    c->dict.n_stack_table = pp->n_sample + 1;
    c->dict.string_table = pp->string_table;
    c->dict.n_string_table = pp->n_string_table;
    c->dict.link_table = c->linkv;
    c->dict.n_link_table = 1;
    c->dict.attribute_table = c->attrv;
    c->dict.n_attribute_table = c->nattr;
    return 0;
}

static void conv_free(conv *c)
{
    free(c->maps);
    free(c->mapv);
    free(c->funcs);
    free(c->funcv);
    free(c->locs);
    free(c->locv);
    free(c->lines);
    free(c->linev);
    free(c->stacks);
    free(c->stackv);
    free(c->locidx);
    free(c->attrs);
    free(c->attrv);
    free(c->avals);
    free(c->astr);
    free(c->sattr);
}

/* The profiles of the sample types, energy first; what they hold is
 * malloc'd into *mem (free it). */
typedef struct profs {
    P(Profile) * v[8];
    P(Profile) p[8];
    P(ValueType) st[8], period;
    size_t n;
    P(Sample) * samples, **samplev;
    int64_t *values;
} profs;

static int make_profiles(profs *ps, const conv *c, uint64_t time_unix_ns)
{
    const pprof_t *pp = c->pp;
    size_t nt = pp->n_sample_type < 8 ? pp->n_sample_type : 8;
    ps->samples = calloc(nt * pp->n_sample + 1, sizeof(*ps->samples));
    ps->samplev = calloc(nt * pp->n_sample + 1, sizeof(*ps->samplev));
    ps->values = calloc(nt * pp->n_sample + 1, sizeof(*ps->values));
    if (!ps->samples || !ps->samplev || !ps->values)
        return -ENOMEM;
    size_t first = 0; /* energy first: the default */
    for (size_t t = 0; t < nt; t++)
        if (pp->sample_type[t]->type == pp->default_sample_type)
            first = t;
    ps->period = (P(ValueType))PINIT(VALUE_TYPE);
    if (pp->period_type) {
        ps->period.type_strindex = (int32_t)pp->period_type->type;
        ps->period.unit_strindex = (int32_t)pp->period_type->unit;
    }
    size_t at = 0;
    for (size_t k = 0; k < nt; k++) {
        size_t t = k == 0 ? first : k <= first ? k - 1 : k;
        P(Profile) *p = &ps->p[ps->n];
        *p = (P(Profile))PINIT(PROFILE);
        ps->st[ps->n] = (P(ValueType))PINIT(VALUE_TYPE);
        ps->st[ps->n].type_strindex = (int32_t)pp->sample_type[t]->type;
        ps->st[ps->n].unit_strindex = (int32_t)pp->sample_type[t]->unit;
        p->sample_type = &ps->st[ps->n];
        p->time_unix_nano = time_unix_ns;
        p->duration_nano = (uint64_t)pp->duration_nanos;
        p->period_type = &ps->period;
        p->period = pp->period;
        p->samples = &ps->samplev[at];
        for (size_t i = 0; i < pp->n_sample; i++) {
            const Perftools__Profiles__Sample *s = pp->sample[i];
            if (t >= s->n_value || !s->value[t])
                continue;
            ps->samples[at] = (P(Sample))PINIT(SAMPLE);
            ps->samples[at].stack_index = (int32_t)(i + 1);
            ps->values[at] = s->value[t];
            ps->samples[at].values = &ps->values[at];
            ps->samples[at].n_values = 1;
            if (c->sattr[i]) {
                ps->samples[at].attribute_indices = &c->sattr[i];
                ps->samples[at].n_attribute_indices = 1;
            }
            ps->samplev[at] = &ps->samples[at];
            at++;
            p->n_samples++;
        }
        ps->v[ps->n++] = p;
    }
    return 0;
}

/* The resource's attributes: at most 9. */
static size_t resource_attrs(const rp_otlp_profile_opts *o,
                             Opentelemetry__Proto__Common__V1__KeyValue *kv,
                             Opentelemetry__Proto__Common__V1__AnyValue *av,
                             Opentelemetry__Proto__Common__V1__KeyValue **kvp)
{
    const pa_cgroup_names *c = o->names;
    const char *keys[9] = {"service.name", "host.name",   "container.id",       "container.name",
                           "k8s.pod.name", "k8s.pod.uid", "k8s.namespace.name", "process.pid"};
    const char *vals[8] = {o->service_name,
                           o->host_name,
                           c ? c->container_id : NULL,
                           c ? c->container_name : NULL,
                           c ? c->pod_name : NULL,
                           c ? c->pod_uid : NULL,
                           c ? c->pod_namespace : NULL,
                           NULL};
    size_t n = 0;
    for (size_t i = 0; i < 8; i++) {
        if (i < 7 && (!vals[i] || !*vals[i]))
            continue;
        if (i == 7 && o->pid <= 0)
            continue;
        kv[n] = (Opentelemetry__Proto__Common__V1__KeyValue)
            OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
        av[n] = (Opentelemetry__Proto__Common__V1__AnyValue)
            OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
        kv[n].key = (char *)keys[i];
        kv[n].value = &av[n];
        if (i == 7) {
            av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
            av[n].int_value = o->pid;
        } else {
            av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
            av[n].string_value = (char *)vals[i];
        }
        kvp[n] = &kv[n];
        n++;
    }
    return n;
}

/* Packs the request of c's dictionary and ps's profiles. */
static int pack(conv *c, profs *ps, const rp_otlp_profile_opts *o, uint8_t **out, size_t *len)
{
    Opentelemetry__Proto__Common__V1__KeyValue kv[9], *kvp[9];
    Opentelemetry__Proto__Common__V1__AnyValue av[9];
    Opentelemetry__Proto__Resource__V1__Resource res =
        OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
    res.n_attributes = resource_attrs(o, kv, av, kvp);
    res.attributes = kvp;
    Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
        OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
    scope.name = (char *)"powerapi";
    scope.version = (char *)PA_VERSION_STRING;
    P(ScopeProfiles) sp = PINIT(SCOPE_PROFILES);
    sp.scope = &scope;
    sp.profiles = ps->v;
    sp.n_profiles = ps->n;
    P(ScopeProfiles) * spv[1] = {&sp};
    P(ResourceProfiles) rp = PINIT(RESOURCE_PROFILES);
    rp.resource = &res;
    rp.scope_profiles = spv;
    rp.n_scope_profiles = 1;
    P(ResourceProfiles) * rpv[1] = {&rp};
    Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest req =
        OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
    req.resource_profiles = rpv;
    req.n_resource_profiles = 1;
    req.dictionary = &c->dict;
    size_t n =
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
            &req);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return -ENOMEM;
    opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
        &req, buf);
    *out = buf;
    *len = n;
    return 0;
}

int rp_otlp_profile_encode(const void *pprof, size_t len, const rp_otlp_profile_opts *o,
                           uint8_t **out, size_t *out_len)
{
    size_t raw_len = len;
    uint8_t *raw =
        len >= 2 && ((const uint8_t *)pprof)[0] == 0x1f && ((const uint8_t *)pprof)[1] == 0x8b
            ? gunzip(pprof, len, &raw_len)
            : NULL;
    pprof_t *pp = perftools__profiles__profile__unpack(NULL, raw ? raw_len : len,
                                                       raw ? raw : (const uint8_t *)pprof);
    free(raw);
    if (pp && (!pp->n_string_table || pp->string_table[0][0])) {
        perftools__profiles__profile__free_unpacked(pp, NULL);
        pp = NULL;
    }
    if (!pp)
        return -EINVAL;
    conv c;
    memset(&c, 0, sizeof(c));
    c.pp = pp;
    profs ps;
    memset(&ps, 0, sizeof(ps));
    int rc = dict_tables(&c);
    if (rc == 0)
        rc = dict_stacks(&c);
    if (rc == 0)
        rc = make_profiles(&ps, &c, o->time_unix_ns);
    if (rc == 0)
        rc = pack(&c, &ps, o, out, out_len);
    free(ps.samples);
    free(ps.samplev);
    free(ps.values);
    conv_free(&c);
    perftools__profiles__profile__free_unpacked(pp, NULL);
    return rc;
}
