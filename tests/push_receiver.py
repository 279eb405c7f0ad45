#!/usr/bin/python3
"""Receivers of what powerapi pushes, for the tests, on loopback.

--api otlp: OTLP/HTTP metrics (POST /v1/metrics, protobuf, gzip or not).
Each request accepted is appended to --out as one JSON line: the resource's
attributes and every point flattened (metric name, unit, kind, temporality,
monotonic, start and time, value, attributes), the headers.

--api otlp-profiles: OTLP/HTTP profiles (POST /v1development/profiles, the
alpha signal): the dictionary's tables checked (their zero values at index 0,
every index in range, every function named) and each request written as its
resource's attributes and, per profile, its sample type and the sum of its
values; a request that fails the checks is answered 400 with its "error".

--api pyroscope: Pyroscope's HTTP ingest API as its documentation states it
(POST /ingest?name=APP{labels}&from=UNIX&until=UNIX&format=pprof, the body
application/octet-stream).  Every push must decode as pprof with an energy
sample type; each is appended to --out: the application, its labels, from,
until, the sample types, the default one, and the totals.  A push that does
not is answered 400 and written with its "error".

Python, not C: the messages are decoded by Google's protobuf runtime
(Debian python3-protobuf) from classes that protoc (Debian
protobuf-compiler) generates here, at test time, from the same .proto files
the project encodes with protobuf-c (report/opentelemetry-proto,
profcore/pprof.proto), so that an encoding mistake of ours is not hidden by
the same mistake in a decoder of ours.

Usage: push_receiver.py --api otlp|otlp-profiles|pyroscope --out FILE [--port N]
                        [--mode ok|status:CODE|hang]
Prints "port N" on stdout once listening.
"""
import argparse
import gzip
import http.server
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "report", "opentelemetry-proto")
PROFCORE = os.path.join(HERE, "..", "profcore")


def load_otlp():
    gen = tempfile.mkdtemp(prefix="otlp-py-")
    files = [
        "opentelemetry/proto/common/v1/common.proto",
        "opentelemetry/proto/resource/v1/resource.proto",
        "opentelemetry/proto/metrics/v1/metrics.proto",
        "opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
    ]
    subprocess.run(["protoc", "--python_out=" + gen, "-I" + PROTO] + files, check=True)
    sys.path.insert(0, gen)
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    return metrics_service_pb2


def any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def flatten(req):
    out = {"resource": {}, "points": []}
    for rm in req.resource_metrics:
        for kv in rm.resource.attributes:
            out["resource"][kv.key] = any_value(kv.value)
        for sm in rm.scope_metrics:
            out["scope"] = sm.scope.name
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                data = getattr(m, kind)
                for p in data.data_points:
                    attrs = {}
                    for kv in p.attributes:
                        if kv.key in attrs:
                            raise ValueError("attribute %s twice" % kv.key)
                        attrs[kv.key] = any_value(kv.value)
                    out["points"].append({
                        "name": m.name, "unit": m.unit, "kind": kind,
                        "temporality": getattr(data, "aggregation_temporality", 0),
                        "monotonic": getattr(data, "is_monotonic", False),
                        "start": p.start_time_unix_nano, "time": p.time_unix_nano,
                        "value": p.as_double if p.WhichOneof("value") == "as_double" else p.as_int,
                        "attrs": attrs})
    return out


def load_pprof():
    gen = tempfile.mkdtemp(prefix="pprof-py-")
    subprocess.run(["protoc", "--python_out=" + gen, "-I" + PROFCORE, "pprof.proto"], check=True)
    sys.path.insert(0, gen)
    import pprof_pb2
    return pprof_pb2


def parse_name(name):
    if "{" not in name:
        return name, {}
    app, rest = name.split("{", 1)
    if not rest.endswith("}"):
        raise ValueError("name without its closing brace: " + name)
    labels = {}
    for kv in rest[:-1].split(","):
        k, v = kv.split("=", 1)
        labels[k] = v
    return app, labels


def decode(pb, body):
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    prof = pb.Profile()
    prof.ParseFromString(body)
    st = [(prof.string_table[t.type], prof.string_table[t.unit]) for t in prof.sample_type]
    totals = [0] * len(st)
    scopes = {}  # energy by the label scope=NAME
    for s in prof.sample:
        for i, v in enumerate(s.value):
            totals[i] += v
        for lb in s.label:
            if prof.string_table[lb.key] == "scope":
                name = prof.string_table[lb.str]
                scopes[name] = scopes.get(name, 0) + s.value[-1]
    default = prof.string_table[prof.default_sample_type] if prof.default_sample_type else ""
    funcs = {f.id: prof.string_table[f.name] for f in prof.function}
    return {"sample_types": st, "default": default,
            "totals": {t: totals[i] for i, (t, _) in enumerate(st)},
            "functions": len(funcs), "samples": len(prof.sample), "scopes": scopes}


def load_otlp_profiles():
    gen = tempfile.mkdtemp(prefix="otlp-prof-py-")
    files = [
        "opentelemetry/proto/common/v1/common.proto",
        "opentelemetry/proto/resource/v1/resource.proto",
        "opentelemetry/proto/profiles/v1development/profiles.proto",
        "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
    ]
    subprocess.run(["protoc", "--python_out=" + gen, "-I" + PROTO] + files, check=True)
    sys.path.insert(0, gen)
    from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2
    return profiles_service_pb2


def check_dictionary(d):
    for name in ("mapping_table", "location_table", "function_table", "link_table",
                 "attribute_table", "stack_table"):
        table = getattr(d, name)
        if not table or table[0].ByteSize() not in (0, 28):  # a zero Link: 16 and 8 zero bytes
            raise ValueError("%s[0] is not the zero value" % name)
    if not d.string_table or d.string_table[0] != "":
        raise ValueError("string_table[0] is not empty")
    for f in d.function_table[1:]:
        if not d.string_table[f.name_strindex]:
            raise ValueError("a function without a name")
    for loc in d.location_table[1:]:
        if loc.mapping_index >= len(d.mapping_table):
            raise ValueError("a mapping index out of range")
        for line in loc.lines:
            if not 0 < line.function_index < len(d.function_table):
                raise ValueError("a function index out of range")
    for st in d.stack_table[1:]:
        for i in st.location_indices:
            if not 0 < i < len(d.location_table):
                raise ValueError("a location index out of range")


def otlp_profiles_request(svc, path, headers, body):
    if path != "/v1development/profiles":
        return 404, "text/plain", b"no such path\n", None
    req = svc.ExportProfilesServiceRequest()
    req.ParseFromString(body)
    rec = {"resource": {}, "profiles": []}
    try:
        d = req.dictionary
        check_dictionary(d)
        for rp in req.resource_profiles:
            for kv in rp.resource.attributes:
                rec["resource"][kv.key] = any_value(kv.value)
            for sp in rp.scope_profiles:
                for p in sp.profiles:
                    for smp in p.samples:
                        if not 0 < smp.stack_index < len(d.stack_table):
                            raise ValueError("a stack index out of range")
                    scopes = {}  # by the sample's attribute scope=NAME
                    for smp in p.samples:
                        for a in smp.attribute_indices:
                            kv = d.attribute_table[a]
                            if d.string_table[kv.key_strindex] == "scope":
                                name = any_value(kv.value)
                                scopes[name] = scopes.get(name, 0) + sum(smp.values)
                    rec["profiles"].append({
                        "scopes": scopes,
                        "type": d.string_table[p.sample_type.type_strindex],
                        "unit": d.string_table[p.sample_type.unit_strindex],
                        "samples": len(p.samples), "time": p.time_unix_nano,
                        "total": sum(v for smp in p.samples for v in smp.values)})
    except Exception as e:  # answered and recorded
        rec["error"] = str(e)
    answer = svc.ExportProfilesServiceResponse().SerializeToString()
    return (400, "text/plain", (rec["error"] + "\n").encode(), rec) if "error" in rec \
        else (200, "application/x-protobuf", answer, rec)


def otlp_request(svc, path, headers, body):
    """(status, content type, answer, record or None)"""
    if path != "/v1/metrics":
        return 404, "text/plain", b"no such path\n", None
    if headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    req = svc.ExportMetricsServiceRequest()
    req.ParseFromString(body)
    rec = flatten(req)
    rec["headers"] = {k.lower(): v for k, v in headers.items()}
    rec["received"] = time.time_ns()
    return 200, "application/x-protobuf", svc.ExportMetricsServiceResponse().SerializeToString(), rec


def pyroscope_request(pb, path, headers, body):
    url = urllib.parse.urlsplit(path)
    q = urllib.parse.parse_qs(url.query)
    rec = {"path": url.path, "query": {k: v[0] for k, v in q.items()},
           "content_type": headers.get("Content-Type")}
    try:
        if url.path != "/ingest":
            raise ValueError("not /ingest: " + url.path)
        for k in ("name", "from", "until"):
            if k not in q:
                raise ValueError("no " + k)
        if q.get("format", [""])[0] != "pprof":
            raise ValueError("format is not pprof")
        rec["app"], rec["labels"] = parse_name(q["name"][0])
        rec["from"], rec["until"] = int(q["from"][0]), int(q["until"][0])
        if rec["until"] <= rec["from"]:
            raise ValueError("until <= from")
        rec.update(decode(pb, body))
        if ["energy", "microjoules"] not in [list(t) for t in rec["sample_types"]]:
            raise ValueError("no energy sample type")
    except Exception as e:  # answered and recorded
        rec["error"] = str(e)
    answer = (rec.get("error", "ok") + "\n").encode()
    return 400 if "error" in rec else 200, "text/plain", answer, rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", choices=("otlp", "otlp-profiles", "pyroscope"), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok")
    args = ap.parse_args()
    classes, handle = {"otlp": (load_otlp, otlp_request),
                       "otlp-profiles": (load_otlp_profiles, otlp_profiles_request),
                       "pyroscope": (load_pprof, pyroscope_request)}[args.api]
    classes = classes()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, ctype, body):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if args.mode == "hang":
                time.sleep(3600)
            if args.mode.startswith("status:"):
                self.reply(int(args.mode[7:]), "text/plain", b"test receiver says no\n")
                return
            code, ctype, answer, rec = handle(classes, self.path, self.headers, body)
            if rec is not None:
                with open(args.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")
            self.reply(code, ctype, answer)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
