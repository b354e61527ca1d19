"""Tests of the model directory's save transaction (dainx/_savedir.py,
behind DAIN.save): temporaries named after the process that owns them,
those of a killed save removed once their owner is gone, and errors that
name the caller's path. It needs neither numpy nor libdainx."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

_spec = importlib.util.spec_from_file_location(
    "dainx_savedir", os.path.join(os.path.dirname(__file__), "..", "dainx", "_savedir.py"))
savedir = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(savedir)


def dead_pid():
    # The interpreter itself: the wheel's tests run with an empty PATH.
    p = subprocess.Popen([sys.executable, "-c", ""])
    p.wait()
    return p.pid


def stale(parent, base, kind, pid, host=None):
    return os.path.join(parent, ".%s.dainx-%s-%d-%s-%016x" % (base, kind, pid, host or savedir._HOST, 7))


class SaveDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.parent = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_temporary_names_the_process(self):
        seen = []
        real = os.fsync

        def spy(fd):
            seen.extend(os.listdir(self.parent))
            return real(fd)

        from unittest import mock
        with mock.patch("os.fsync", side_effect=spy):
            savedir.save_dir(os.path.join(self.parent, "m"), {"model.json": b"{}"}, "m")
        self.assertTrue(seen and seen[0].startswith(".m.dainx-tmp-%d-" % os.getpid()), seen)
        self.assertEqual(os.listdir(self.parent), ["m"])

    def test_killed_saves_swept(self):
        pid = dead_pid()
        path = os.path.join(self.parent, "m")
        left = stale(self.parent, "m", "tmp", pid)
        os.mkdir(left)
        open(os.path.join(left, "model.json"), "w").close()
        live = stale(self.parent, "m", "tmp", os.getppid())
        os.mkdir(live)
        other = stale(self.parent, "n", "tmp", pid)
        os.mkdir(other)
        savedir.save_dir(path, {"model.json": b"{}"}, "m")
        self.assertEqual(sorted(os.listdir(self.parent)), sorted(["m", os.path.basename(live), os.path.basename(other)]))

    def test_killed_between_renames_restores(self):
        # A save killed after it set the old directory aside, before the
        # new one was renamed in: the next save puts the old one back
        # first, then replaces it.
        path = os.path.join(self.parent, "m")
        aside = stale(self.parent, "m", "old", dead_pid())
        os.mkdir(aside)
        with open(os.path.join(aside, "model.json"), "w") as f:
            f.write("old")
        savedir.sweep(self.parent, "m")
        self.assertEqual(os.listdir(self.parent), ["m"])
        with open(os.path.join(path, "model.json")) as f:
            self.assertEqual(f.read(), "old")

    def test_full_disk_names_the_path(self):
        disk = os.path.join(self.parent, "disk")
        os.mkdir(disk)
        mount = shutil.which("mount", path=os.defpath + ":/usr/sbin:/sbin")
        umount = shutil.which("umount", path=os.defpath + ":/usr/sbin:/sbin")
        if mount is None or umount is None:
            self.skipTest("no mount command")
        if subprocess.run([mount, "-t", "tmpfs", "-o", "size=4k", "tmpfs", disk],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            self.skipTest("no tmpfs (needs root)")
        try:
            user = os.path.join(disk, "model")
            with self.assertRaises(OSError) as cm:
                savedir.save_dir(os.path.abspath(user), {"model.safetensors": b"x" * 100000}, user)
            self.assertEqual(cm.exception.errno, 28)
            self.assertIn(user, str(cm.exception))
            self.assertNotIn("dainx-tmp", str(cm.exception))
            self.assertEqual(os.listdir(disk), [])
        finally:
            subprocess.run([umount, disk])


if __name__ == "__main__":
    unittest.main()
