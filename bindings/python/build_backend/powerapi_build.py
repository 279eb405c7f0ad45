"""A PEP 517 build backend for the powerapi package, standard library only
(so that `pip install ./bindings/python` needs no network).

It builds a pure-Python wheel of powerapi/, an sdist, and an editable wheel
(a .pth file pointing at the source tree).  Config setting `library`
(`pip install --config-settings library=PATH`) bakes PATH into
powerapi/_config.py as the first place to load libpowerapi from.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

NAME = "powerapi"  # the package imported
# The distribution's name: "powerapi" on the Python package index is another
# project (Inria's PowerAPI); this one is "libpowerapi-energy", imported as
# powerapi.  DIST_FILE is its normalized form for file names (PEP 427).
DIST = "libpowerapi-energy"
DIST_FILE = "libpowerapi_energy"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, NAME)
TAG = "py3-none-any"


def _version():
    with open(os.path.join(PKG, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("powerapi_build: no __version__ in powerapi/__init__.py")
    return m.group(1)


def _metadata():
    return ("Metadata-Version: 2.1\n"
            "Name: %s\n"
            "Version: %s\n"
            "Summary: Per-process power and energy (ctypes binding of libpowerapi)\n"
            "Requires-Python: >=3.7\n" % (DIST, _version())).encode()


def _dist_info():
    return "%s-%s.dist-info" % (DIST_FILE, _version())


def _package_files(config_settings):
    """(archive name, bytes) of the package's files."""
    out = []
    for name in sorted(os.listdir(PKG)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(PKG, name), "rb") as f:
            data = f.read()
        lib = (config_settings or {}).get("library")
        if name == "_config.py" and lib:
            data = ('"""Baked by pip install --config-settings library=..."""\n'
                    "SEARCH = (%r,)\n" % lib).encode()
        out.append(("%s/%s" % (NAME, name), data))
    return out


def _write_wheel(wheel_directory, files):
    dist = _dist_info()
    files = list(files) + [
        (dist + "/METADATA", _metadata()),
        (dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: powerapi_build\n"
                           "Root-Is-Purelib: true\nTag: %s\n" % TAG).encode()),
        (dist + "/top_level.txt", (NAME + "\n").encode()),
    ]
    record = io.StringIO()
    for arc, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
        record.write("%s,sha256=%s,%d\n" % (arc, digest.rstrip(b"=").decode(),
                                            len(data)))
    record.write("%s/RECORD,,\n" % dist)
    files.append((dist + "/RECORD", record.getvalue().encode()))
    wheel = "%s-%s-%s.whl" % (DIST_FILE, _version(), TAG)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "wb") as f:
        f.write(_metadata())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files(config_settings))


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    pth = ("%s_editable.pth" % DIST_FILE, (ROOT + "\n").encode())
    return _write_wheel(wheel_directory, [pth])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (DIST_FILE, _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "build_backend/powerapi_build.py"] + [
                "%s/%s" % (NAME, n) for n in sorted(os.listdir(PKG))
                if n.endswith(".py")]:
            t.add(os.path.join(ROOT, rel), arcname="%s/%s" % (base, rel))
        pkg_info = _metadata()
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        info.size = len(pkg_info)
        t.addfile(info, io.BytesIO(pkg_info))
    return name
