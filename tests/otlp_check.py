#!/usr/bin/python3
"""Checks what tests/push_receiver.py received (one JSON line per request).

  otlp_check.py exact RECEIVED MONITOR_JSON NODE HEADER...
      the last request against the same window's JSON records (powerapi
      monitor --ring --format json): names, units, kinds, attributes and
      values (at the JSON's six decimals), the resource, the header given
  otlp_check.py continuity RECEIVED
      one start time in every request, and each request's window reaches
      back to the previous request's time (no window lost)
  otlp_check.py dropped RECEIVED MIN
      the last request's powerapi.otlp.dropped_batches is at least MIN
  otlp_check.py pyroscope RECEIVED SUMMARY_JSON APP [NAME=VALUE...]
      what tests/push_receiver.py --api pyroscope received: every push decoded, of
      APP, those with the labels given, each push starting where the previous
      ended, and the energies summing to summary.json's (functions,
      [unsampled] and [unattributed])
      (0.5 %: pprof's values are whole microjoules): no profile lost
  otlp_check.py otlp-profiles RECEIVED SUMMARY_JSON SERVICE
      what push_receiver.py --api otlp-profiles received: every request
      checked there, of service.name SERVICE, energy (microjoules) its first
      profile, the energies summing to summary.json's as for pyroscope
  otlp_check.py scopes PYROSCOPE_RECEIVED OTLP_RECEIVED NAME NAME
      the energy of each scope, a label in Pyroscope's pushes and an
      attribute of the OTLP samples, the same in both, the first's larger
Prints what differs and exits 1 on the first failure.
"""
import json
import sys


def fail(msg):
    print("otlp_check: " + msg)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def same6(a, b):
    return float("%.6f" % a) == float(b)


def find(points, name, **attrs):
    hits = [p for p in points if p["name"] == name
            and all(p["attrs"].get(k) == v for k, v in attrs.items())]
    if len(hits) != 1:
        fail("%d points %s %s (want 1)" % (len(hits), name, attrs))
    return hits[0]


KINDS = {"hw.power": ("W", "gauge"), "hw.energy": ("J", "sum"),
         "powerapi.cgroup.series_folded": ("{cgroup}", "gauge"),
         "powerapi.process.series_folded": ("{process}", "gauge"),
         "powerapi.window.duration": ("s", "gauge"), "powerapi.info": ("1", "gauge"),
         "powerapi.otlp.dropped_batches": ("{batch}", "sum")}


def check_shape(points):
    names = set(p["name"] for p in points)
    if names != set(KINDS):
        fail("metrics %s, want %s" % (sorted(names), sorted(KINDS)))
    for p in points:
        unit, kind = KINDS[p["name"]]
        if p["unit"] != unit or p["kind"] != kind:
            fail("%s: unit %s kind %s" % (p["name"], p["unit"], p["kind"]))
        if kind == "sum" and (p["temporality"] != 2 or not p["monotonic"] or not p["start"]):
            fail("%s: not a cumulative monotonic sum with a start time" % p["name"])


def check_target(points, rec, **attrs):
    pw = find(points, "hw.power", **attrs)
    en = find(points, "hw.energy", **attrs)
    if not same6(pw["value"], rec["power_w"]["total"]):
        fail("%s power %r, JSON %r" % (attrs, pw["value"], rec["power_w"]["total"]))
    if not same6(en["value"], rec["energy_j"]["total"]):
        fail("%s energy %r, JSON %r" % (attrs, en["value"], rec["energy_j"]["total"]))
    src = "measured" if rec.get("sources", {}).get("cpu") == "rapl" else "modelled"
    for p in (pw, en):
        if p["attrs"].get("powerapi.source") != src or p["attrs"].get("hw.type") != "host":
            fail("%s: source/hw.type %s" % (attrs, p["attrs"]))


def exact(received, monitor, node, headers):
    reqs = load(received)
    if not reqs:
        fail("nothing received")
    recs = load(monitor)
    system = [r for r in recs if r.get("type") == "system"][-1]
    recs = [r for r in recs if r.get("time") == system["time"]]  # its window's
    # the same window: a request of the same length (serve sums the ring's
    # windows since its last page, as monitor --ring --interval does)
    same = [r for r in reqs if same6(find(r["points"], "powerapi.window.duration")["value"],
                                     system["interval_s"])]
    if not same:
        fail("no request of a %.3f s window" % system["interval_s"])
    req = same[-1]
    pts = req["points"]
    check_shape(pts)
    res = req["resource"]
    if res.get("host.name") != node or res.get("service.name") != "powerapi":
        fail("resource %s" % res)
    if res.get("powerapi.formula") != system["formula"]:
        fail("formula %r, JSON %r" % (res.get("powerapi.formula"), system["formula"]))
    if res.get("powerapi.assumed", "").split("; ") != system["assumed"]:
        fail("assumed %r, JSON %r" % (res.get("powerapi.assumed"), system["assumed"]))
    for header in headers:
        k, v = header.split(": ", 1)
        if req["headers"].get(k.lower()) != v:
            fail("header %s: %r, want %r" % (k, req["headers"].get(k.lower()), v))
    nproc = 0
    for r in recs:
        if r.get("type") == "process":
            nproc += 1
            check_target(pts, r, **{"powerapi.target": "process", "process.pid": r["pid"]})
            p = find(pts, "hw.power", **{"process.pid": r["pid"]})
            if p["attrs"]["process.executable.name"] != r["comm"]:
                fail("comm %r, JSON %r" % (p["attrs"]["process.executable.name"], r["comm"]))
        elif r.get("type") == "cgroup":
            check_target(pts, r, **{"powerapi.target": "cgroup", "powerapi.cgroup": r["cgroup"]})
    got = len([p for p in pts if p["name"] == "hw.power"
               and p["attrs"].get("powerapi.target") == "process"])
    if got != nproc or nproc == 0:
        fail("%d process points, %d JSON records" % (got, nproc))
    if find(pts, "powerapi.process.series_folded")["value"] != 0:
        fail("processes folded without --top or --max-processes")
    for comp in ("cpu", "nic", "idle", "total"):
        p = find(pts, "hw.power", **{"powerapi.target": "system", "powerapi.component": comp})
        if not same6(p["value"], system["power_w"][comp]):
            fail("system %s %r, JSON %r" % (comp, p["value"], system["power_w"][comp]))
    p = find(pts, "hw.energy", **{"powerapi.target": "system"})
    if not same6(p["value"], system["energy_j"]["total"]):
        fail("system energy %r, JSON %r" % (p["value"], system["energy_j"]["total"]))
    p = find(pts, "powerapi.window.duration")
    if not same6(p["value"], system["interval_s"]):
        fail("window %r, JSON %r" % (p["value"], system["interval_s"]))
    print("otlp_check: exact: %d points, %d processes match" % (len(pts), nproc))


def continuity(received):
    reqs = load(received)
    if len(reqs) < 3:
        fail("%d requests" % len(reqs))
    starts = set(p["start"] for r in reqs for p in r["points"] if p["kind"] == "sum")
    if len(starts) != 1:
        fail("%d start times" % len(starts))
    # A batch the receiver wrote but was killed before answering is sent
    # again (at least once, as OTLP's exporters deliver): one such repeat,
    # the same points at the same time, is the outage's; any other is not.
    repeats = 0
    kept = [reqs[0]]
    for r in reqs[1:]:
        if r["points"] == kept[-1]["points"]:
            repeats += 1
            continue
        kept.append(r)
    if repeats > 1:
        fail("%d batches received twice" % repeats)
    reqs = kept
    times = [r["points"][0]["time"] for r in reqs]
    spans = [find(r["points"], "powerapi.window.duration")["value"] for r in reqs]
    for a, b, span in zip(times, times[1:], spans[1:]):
        if b <= a:
            fail("times not increasing: %d then %d" % (a, b))
        if abs((b - a) / 1e9 - span) > 0.005:
            fail("%.3f s between two requests, the second's window %.3f s: windows lost"
                 % ((b - a) / 1e9, span))
    print("otlp_check: continuity: %d requests over %.3f s, one start time, %d sent again"
          % (len(reqs), (times[-1] - times[0]) / 1e9, repeats))


def dropped(received, least):
    reqs = load(received)
    if not reqs:
        fail("nothing received")
    p = find(reqs[-1]["points"], "powerapi.otlp.dropped_batches")
    if p["value"] < least:
        fail("dropped_batches %r < %d" % (p["value"], least))
    print("otlp_check: dropped: %d batches counted, %d requests received"
          % (p["value"], len(reqs)))


def pyroscope(received, summary, app, labels):
    pushes = load(received)
    for p in pushes:
        if "error" in p:
            fail("a push the receiver refused: %s" % p["error"])
        if p["app"] != app:
            fail("application %r, want %r" % (p["app"], app))
    want_labels = dict(kv.split("=", 1) for kv in labels)
    pushes = [p for p in pushes if all(p["labels"].get(k) == v for k, v in want_labels.items())]
    if len(pushes) < 2:
        fail("%d pushes with the labels %s" % (len(pushes), want_labels))
    for p in pushes:
        if "host" not in p["labels"] or p["content_type"] != "application/octet-stream":
            fail("no host label, or content type %r" % p["content_type"])
        if p["default"] != "energy":
            fail("default sample type %r" % p["default"])
    pushes.sort(key=lambda p: p["from"])
    for a, b in zip(pushes, pushes[1:]):
        if b["from"] != a["until"]:
            fail("a push from %d after one until %d: a profile lost" % (b["from"], a["until"]))
    want = summary_energy_uj(summary)  # every frame's, [unsampled] included
    got = sum(p["totals"]["energy"] for p in pushes)
    if abs(got - want) > 0.005 * want + 1:
        fail("%.0f uJ pushed, the profile has %.0f" % (got, want))
    print("otlp_check: pyroscope: %d pushes, %.0f uJ of %.0f" % (len(pushes), got, want))


def summary_energy_uj(path):
    with open(path) as f:
        summary = json.load(f)
    return sum(summary[k] for k in ("functions_energy_j", "unsampled_energy_j",
                                    "unattributed_energy_j")) * 1e6


def otlp_profiles(received, summary, service):
    reqs = load(received)
    if len(reqs) < 2:
        fail("%d requests" % len(reqs))
    got = 0
    for r in reqs:
        if "error" in r:
            fail("a request the receiver refused: %s" % r["error"])
        if r["resource"].get("service.name") != service:
            fail("service.name %r" % r["resource"].get("service.name"))
        first = r["profiles"][0]
        if (first["type"], first["unit"]) != ("energy", "microjoules"):
            fail("the first profile is %s/%s" % (first["type"], first["unit"]))
        got += first["total"]
    want = summary_energy_uj(summary)
    if abs(got - want) > 0.005 * want + 1:
        fail("%.0f uJ pushed, the profile has %.0f" % (got, want))
    print("otlp_check: otlp-profiles: %d requests, %.0f uJ of %.0f" % (len(reqs), got, want))


def scopes(pyroscope_file, otlp_file, names):
    """Both receivers got the energy of each scope named as a label, the
    same in both, and more for the first than for the second."""
    py, ot = {}, {}
    for p in load(pyroscope_file):
        for k, v in p.get("scopes", {}).items():
            py[k] = py.get(k, 0) + v
    for r in load(otlp_file):
        for k, v in r["profiles"][0]["scopes"].items():
            ot[k] = ot.get(k, 0) + v
    for n in names:
        if not py.get(n) or py.get(n) != ot.get(n):
            fail("scope %s: %r uJ in Pyroscope's labels, %r in OTLP's attributes"
                 % (n, py.get(n), ot.get(n)))
    if py[names[0]] <= py[names[1]]:
        fail("scope %s %d uJ, not more than %s %d" % (names[0], py[names[0]], names[1], py[names[1]]))
    print("otlp_check: scopes: %s" % ", ".join("%s %d uJ" % (n, py[n]) for n in names))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "exact":
        exact(a[1], a[2], a[3], a[4:])
    elif a[0] == "continuity":
        continuity(a[1])
    elif a[0] == "scopes":
        scopes(a[1], a[2], a[3:])
    elif a[0] == "otlp-profiles":
        otlp_profiles(a[1], a[2], a[3])
    elif a[0] == "pyroscope":
        pyroscope(a[1], a[2], a[3], a[4:])
    elif a[0] == "dropped":
        dropped(a[1], int(a[2]))
    else:
        fail("unknown mode " + a[0])
