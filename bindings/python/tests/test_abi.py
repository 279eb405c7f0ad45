"""The ctypes mirror must match powerapi.h: sizes, field names, offsets and
field sizes of every public structure, and the constants, as printed by
abi_dump (compiled against the header; path in $POWERAPI_ABI_DUMP)."""

import ctypes
import json
import os
import subprocess
import unittest

from powerapi import _lib


def c_layout():
    exe = os.environ.get("POWERAPI_ABI_DUMP")
    if not exe:
        raise unittest.SkipTest("POWERAPI_ABI_DUMP not set (run through ctest)")
    out = subprocess.run([exe], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


class TestABI(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c_layout()

    def test_every_c_struct_is_mirrored(self):
        self.assertEqual(sorted(self.c["structs"]), sorted(_lib.STRUCTS))

    def test_struct_layouts(self):
        for name, cdef in self.c["structs"].items():
            py = _lib.STRUCTS[name]
            with self.subTest(struct=name):
                self.assertEqual(ctypes.sizeof(py), cdef["size"],
                                 "%s: sizeof differs" % name)
                self.assertEqual([f[0] for f in py._fields_],
                                 [f[0] for f in cdef["fields"]],
                                 "%s: fields differ (names or order)" % name)
                for fname, off, size in cdef["fields"]:
                    d = getattr(py, fname)
                    self.assertEqual((d.offset, d.size), (off, size),
                                     "%s.%s: (offset, size) differ" % (name, fname))

    def test_constants(self):
        self.assertEqual(self.c["constants"], _lib.CONSTANTS)


if __name__ == "__main__":
    unittest.main()
