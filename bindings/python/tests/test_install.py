"""`pip install ./bindings/python` works offline (in-tree build backend, no
index) and the installed copy finds the library."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import powerapi


class TestPipInstall(unittest.TestCase):
    def setUp(self):
        self.src = os.environ.get("POWERAPI_PY_SOURCE")
        if not self.src:
            self.skipTest("POWERAPI_PY_SOURCE not set (run through ctest)")
        if subprocess.run([sys.executable, "-m", "pip", "--version"],
                          capture_output=True).returncode != 0:
            self.skipTest("no pip for %s" % sys.executable)
        self.tmp = tempfile.mkdtemp(prefix="powerapi-pip-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def pip_install(self, *extra):
        target = os.path.join(self.tmp, "site")
        env = dict(os.environ, PIP_NO_INDEX="1",
                   PIP_DISABLE_PIP_VERSION_CHECK="1",
                   PIP_CACHE_DIR=os.path.join(self.tmp, "cache"))
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                            "--no-index", "--target", target, *extra,
                            self.src], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return target

    def run_installed(self, target, code, **env):
        e = dict(os.environ, PYTHONPATH=target, **env)
        e.pop("POWERAPI_LIBRARY", None)
        e.update(env)
        return subprocess.run([sys.executable, "-c", code], env=e,
                              capture_output=True, text=True, timeout=60,
                              cwd=self.tmp)

    def test_offline_install_and_baked_library(self):
        lib = powerapi.library_path()
        target = self.pip_install("--config-settings", "library=" + lib)
        self.assertTrue(os.path.isfile(
            os.path.join(target, "powerapi", "_ring.py")))
        r = self.run_installed(
            target, "import powerapi; print(powerapi.__file__); "
            "print(powerapi.library_path()); print(powerapi.version())")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout.split()
        self.assertTrue(out[0].startswith(target), out)
        self.assertEqual(out[1], lib)
        self.assertEqual(out[2], powerapi.version())
        # The source tree is left clean (no build/ or egg-info).
        self.assertEqual(sorted(os.listdir(self.src)),
                         sorted(["build_backend", "powerapi", "pyproject.toml",
                                 "tests", ".gitignore"]))


if __name__ == "__main__":
    unittest.main()
