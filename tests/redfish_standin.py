#!/usr/bin/env python3
"""A BMC's Redfish service on loopback, for the redfish sensor's tests and
the README (issue 46; DESIGN.md section 19).

Serves DMTF's public-rackmount1 mockup (tests/fixtures/redfish, BSD-3-Clause,
its licence in fixtures/redfish/LICENSE.md) over HTTPS with a certificate of a test CA made
here with openssl, HTTP Basic authentication (user "powerapi", password
"secret"), and modes chosen by a path prefix, so that one service answers
every case:

  /redfish/...            the mockup (EnvironmentMetrics PowerWatts 374 W)
  /watts/N/redfish/...    the same, reading N W (Power and EnvironmentMetrics)
  /legacy/redfish/...     the chassis without EnvironmentMetrics (Power: 344 W)
  /psu/redfish/...        the chassis with PowerSubsystem only (supply Bay1: 937.4 W)
  /slow/redfish/...       answers after 3 s (a BMC that stalls)
  /fail/redfish/...       HTTP 500

and, for the http-meter sensor, a smart plug and a PDU:

  /plug/N                 Tasmota's JSON: {"StatusSNS":{"ENERGY":{"Power":N}}}
  /metrics/N              Prometheus text: outlet 1 at 20 W, outlet 3 at N W

Usage: redfish_standin.py DIR   (DIR: made if absent; gets ca.pem, the
credentials file, port, pid and log).  Prints the port and returns once the
service listens; the service runs in the background until its pid is killed.
"""
import base64
import http.server
import json
import os
import re
import socketserver
import ssl
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MOCKUP = os.path.join(HERE, "fixtures", "redfish", "public-rackmount1")
AUTH = "Basic " + base64.b64encode(b"powerapi:secret").decode()


def make_certs(d):
    """A test CA and a certificate for 127.0.0.1 signed by it."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]  # fast to make
    run("req", "-x509", *ec, "-nodes", "-days", "2", "-subj",
        "/CN=powerapi test CA", "-keyout", "ca.key", "-out", "ca.pem")
    run("req", *ec, "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", "bmc.key", "-out", "bmc.csr")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "bmc.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "bmc.pem")


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        with open(self.server.log, "a") as f:
            f.write("%s %s\n" % (time.strftime("%H:%M:%S"), fmt % args))

    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0].rstrip("/")
        mode, watts = "", None
        m = re.match(r"^/(watts)/([0-9.]+)(/redfish/.*)$", path) or \
            re.match(r"^/(legacy|psu|slow|fail)(/redfish/.*)$", path)
        if m and m.group(1) == "watts":
            mode, watts, path = "watts", float(m.group(2)), m.group(3)
        elif m:
            mode, path = m.group(1), m.group(2)
        if self.headers.get("Authorization") != AUTH:
            return self.answer(401, {"error": "authentication required"})
        m = re.match(r"^/(plug|metrics)/([0-9.]+)$", path)
        if m and m.group(1) == "plug":
            return self.answer(200, {"StatusSNS": {"ENERGY": {"Power": float(m.group(2))}}})
        if m:
            text = ("# HELP pdu_outlet_power_watts An outlet's power.\n"
                    "# TYPE pdu_outlet_power_watts gauge\n"
                    'pdu_outlet_power_watts{outlet="1"} 20\n'
                    'pdu_outlet_power_watts{outlet="3"} %s\n' % m.group(2)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            return self.wfile.write(text)
        if mode == "slow":
            time.sleep(3)
        if mode == "fail":
            return self.answer(500, {"error": "internal error"})
        file = os.path.join(MOCKUP, path[len("/redfish/v1"):].lstrip("/"), "index.json")
        if not path.startswith("/redfish/v1") or ".." in path or not os.path.exists(file):
            return self.answer(404, {"error": "not found"})
        with open(file) as f:
            body = json.load(f)
        if mode in ("legacy", "psu"):
            body.pop("EnvironmentMetrics", None)
        if mode == "psu":
            body.pop("Power", None)
        if watts is not None and "PowerWatts" in body:
            body["PowerWatts"]["Reading"] = watts
        if watts is not None and "PowerControl" in body:
            body["PowerControl"][0]["PowerConsumedWatts"] = watts
        self.answer(200, body)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    d = os.path.abspath(sys.argv[1])
    os.makedirs(d, exist_ok=True)
    make_certs(d)
    cred = os.path.join(d, "credentials")
    with open(os.open(cred, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write("powerapi:secret\n")
    srv = Server(("127.0.0.1", 0), Handler)
    srv.log = os.path.join(d, "log")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, "bmc.pem"), os.path.join(d, "bmc.key"))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    port = srv.server_address[1]
    with open(os.path.join(d, "port"), "w") as f:
        f.write("%d\n" % port)
    sys.stdout.write("%d\n" % port)
    sys.stdout.flush()
    pid = os.fork()
    if pid:  # the caller goes on once the port is bound and the pid written
        with open(os.path.join(d, "pid"), "w") as f:
            f.write("%d\n" % pid)
        return
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    srv.serve_forever()


if __name__ == "__main__":
    main()
