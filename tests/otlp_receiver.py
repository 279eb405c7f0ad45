#!/usr/bin/python3
"""A small OTLP/HTTP (protobuf) receiver for the tests, on loopback.

Python, not C: the request is decoded by Google's protobuf runtime (Debian
python3-protobuf) from classes that protoc (Debian protobuf-compiler)
generates here, at test time, from the same vendored .proto files the
project encodes with protobuf-c (report/opentelemetry-proto), so that an
encoding mistake of ours is not hidden by the same mistake in a decoder of
ours.  Each request accepted is appended to --out as one JSON line: the
resource's attributes and every point flattened (metric name, unit, kind,
temporality, monotonic, start and time, value, attributes).

Usage: otlp_receiver.py --out FILE [--port N] [--mode ok|status:CODE|hang]
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

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "report", "opentelemetry-proto")


def load_classes():
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", default="ok")
    args = ap.parse_args()
    svc = load_classes()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def reply(self, code, body=b"", ctype="application/x-protobuf"):
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
                self.reply(int(args.mode[7:]), b"test receiver says no\n", "text/plain")
                return
            if self.path != "/v1/metrics":
                self.reply(404, b"no such path\n", "text/plain")
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            req = svc.ExportMetricsServiceRequest()
            req.ParseFromString(body)
            rec = flatten(req)
            rec["headers"] = {k.lower(): v for k, v in self.headers.items()}
            rec["received"] = time.time_ns()
            with open(args.out, "a") as f:
                f.write(json.dumps(rec) + "\n")
            self.reply(200, svc.ExportMetricsServiceResponse().SerializeToString())

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
