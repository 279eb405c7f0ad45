"""The ring reader (and writer) of the Python binding, on a ring of this
test's own (unique name), fed by a context with exact Python modules."""

import errno
import os
import unittest

import powerapi
from test_powerapi import S, ClockSensor, LinearFormula


class TestRing(unittest.TestCase):
    def setUp(self):
        self.name = "pa-pytest-%d" % os.getpid()
        self.pid = os.getpid()
        self.ctx = powerapi.Context()
        self.sensor = ClockSensor([self.pid])
        self.ctx.register(self.sensor)
        self.ctx.register(LinearFormula())
        self.ctx.enable("procfs-cpu")
        self.ctx.enable("py-clock", "share=0.5")
        self.ctx.enable("py-linear", "watts=20")
        self.ctx.watch_pid(self.pid)
        self.writer = powerapi.RingWriter(self.name, capacity=4,
                                          interval_s=1.0)

    def tearDown(self):
        self.writer.close()
        self.ctx.close()

    def window(self, t_ns):
        self.sensor.now_ns = t_ns
        self.ctx.tick(time_ns=t_ns)
        self.writer.publish(self.ctx)

    def mine(self, report):
        return [t for t in report.targets
                if t.type == powerapi.PA_TARGET_PROCESS and t.pid == self.pid]

    def test_read_windows_in_order(self):
        self.sensor.now_ns = 1 * S
        self.ctx.tick(time_ns=1 * S)  # priming, no report yet
        with powerapi.RingReader(self.name) as ring:
            self.assertIsNone(ring.read())  # nothing published yet
            self.window(2 * S)
            self.window(4 * S)
            r1 = ring.read()  # the newest on the first read
            self.assertEqual(ring.seq, 2)
            self.assertEqual(r1.time_ns, 4 * S)
            self.assertAlmostEqual(r1.interval_s, 2.0, places=9)
            self.assertAlmostEqual(self.mine(r1)[0].power.cpu_w, 10.0, places=9)
            self.assertAlmostEqual(self.mine(r1)[0].power.cpu_j, 30.0, places=9)
            self.assertIsNone(ring.read())
            self.window(5 * S)
            r2 = ring.read()
            self.assertEqual(ring.seq, 3)
            self.assertEqual(r2.time_ns, 5 * S)
            self.assertAlmostEqual(r2.system.cpu_w, 20.0, places=9)
            info = ring.info()
            self.assertEqual(info.version, powerapi._lib.PA_RING_VERSION)
            self.assertEqual(info.capacity, 4)
            self.assertEqual(info.writer_pid, self.pid)
            self.assertEqual(info.newest, 3)
            self.assertTrue(info.alive)

    def test_aggregate(self):
        self.sensor.now_ns = 1 * S
        self.ctx.tick(time_ns=1 * S)
        self.window(2 * S)  # 1 s at 10 W
        self.ctx.configure("py-linear", "watts=60")
        self.window(5 * S)  # 3 s at 30 W
        with powerapi.RingReader(self.name) as ring:
            agg = ring.aggregate()
            self.assertEqual(ring.seq, 2)
            self.assertAlmostEqual(agg.interval_s, 4.0, places=9)
            p = self.mine(agg)[0].power
            # (10 J + 90 J) / 4 s
            self.assertAlmostEqual(p.cpu_w, 25.0, places=9)
            self.assertAlmostEqual(p.cpu_j, 100.0, places=9)
            self.assertIsNone(ring.aggregate())  # nothing newer

    def test_writer_stops(self):
        self.sensor.now_ns = 1 * S
        self.ctx.tick(time_ns=1 * S)
        ring = powerapi.RingReader(self.name)
        self.window(2 * S)
        self.writer.close()
        self.assertIsNotNone(ring.read())  # what remains is still readable
        with self.assertRaises(powerapi.PowerAPIError) as cm:
            ring.read()
        self.assertEqual(cm.exception.errno, errno.EOWNERDEAD)
        self.assertEqual(list(ring.follow(timeout_s=1)), [])
        ring.close()
        with self.assertRaises(powerapi.PowerAPIError) as cm:
            powerapi.RingReader(self.name)
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        self.assertTrue(cm.exception.strerror)


if __name__ == "__main__":
    unittest.main()
