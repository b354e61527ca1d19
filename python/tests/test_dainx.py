"""Tests of the Python package dainx (make test-python): results equal
`dainx augment`'s, bad input raises, threads, files, no copies."""

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

import dainx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DAINX_BIN", os.path.join(ROOT, "dainx"))
OPTS = dict(seed=7, layers="48,16", epochs=3, ratio=0.5, backend="cpu", quiet=True)
FLAGS = ["-seed", "7", "-layers", "48,16", "-epochs", "3", "-ratio", "0.5", "-backend", "cpu", "-quiet"]
SMALL = dict(backend="cpu", quiet=True, epochs=1, layers="12,4")


class Dainx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "t.tsv")
        subprocess.run([BIN, "synth", "-dims", "40,40,40", "-nnz", "4000", "-rank", "3", "-seed", "3",
                        "-output", cls.path], check=True, stdout=subprocess.DEVNULL)
        cls.idx, cls.val = dainx.read(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def binary(self, seed=7):
        out = os.path.join(self.tmp.name, "bin%d.tsv" % seed)
        flags = list(FLAGS)
        flags[1] = str(seed)
        rep = subprocess.run([BIN, "augment", "-input", self.path, "-output", out] + flags, check=True,
                             stdout=subprocess.PIPE).stdout
        idx, val = dainx.read(out)
        return idx, val, json.loads(rep)

    def test_version(self):
        # The package's, the library's and the binary's version are one.
        v = dainx.version()
        self.assertEqual(dainx.__version__, v)
        self.assertNotIn("devel", v)
        out = subprocess.run([BIN, "version"], check=True, stdout=subprocess.PIPE).stdout.decode().split()
        self.assertEqual(out, ["dainx", v])

    def test_read(self):
        self.assertEqual(self.idx.shape, (4000, 3))
        self.assertEqual(self.idx.dtype, np.int32)
        self.assertEqual(self.val.dtype, np.float64)

    def test_equal_to_binary(self):
        aug_idx, aug_val, report = dainx.augment(self.idx, self.val, **OPTS)
        want_idx, want_val, want = self.binary()
        self.assertEqual(aug_idx.shape, (report["n_aug"], 3))
        np.testing.assert_array_equal(aug_idx, want_idx)
        np.testing.assert_array_equal(aug_val, want_val)
        for k in ("rmse_before", "rmse_after", "n_train", "n_val", "n_test", "n_aug", "best_epoch", "sample_draws"):
            self.assertEqual(report[k], want[k], k)
        # Other dtypes and layouts give the same cells.
        a2, v2, _ = dainx.augment(np.asfortranarray(self.idx.astype(np.int64)), self.val.astype(np.float32),
                                  **dict(OPTS, layers=[48, 16]))
        self.assertEqual(a2.shape[0], aug_idx.shape[0])

    def test_no_copy(self):
        aug_idx, aug_val, _ = dainx.augment(self.idx, self.val, **dict(OPTS, ratio=0.1))
        self.assertIsNotNone(aug_idx.base)  # a view over the library's result
        self.assertFalse(aug_idx.flags.owndata)
        del aug_idx
        self.assertTrue(np.isfinite(aug_val).all())  # still alive after its sibling went

    def test_bad_input(self):
        idx = np.array([[0, 0, 0], [1, 2, 3], [2, 1, 0], [3, 3, 3]])
        val = np.array([1.0, 2, 3, 4])
        cases = []
        bad = idx.copy(); bad[1, 1] = -5
        cases.append(("negative", bad, val, "index -5 in mode 2 is negative"))
        bad = idx.copy(); bad[3, 2] = 2 ** 31
        cases.append(("outside int32", bad, val, "outside int32"))
        bad = idx.copy(); bad[3, 2] = 2 ** 31 - 1
        cases.append(("too large", bad, val, "too large"))
        badv = val.copy(); badv[2] = np.nan
        cases.append(("NaN", idx, badv, "value NaN is not finite"))
        bad = idx.copy(); bad[3] = [1, 2, 3]
        cases.append(("duplicate", bad, val, "cell 3 (1, 2, 3) duplicates cell 1"))
        cases.append(("nnz 0", np.zeros((0, 3), np.int32), np.zeros(0), "nnz 0"))
        cases.append(("order 0", np.zeros((4, 0), np.int32), val, "order 0"))
        cases.append(("1-D idx", np.arange(4), val, "2-D"))
        cases.append(("float idx", idx.astype(float), val, "integer"))
        cases.append(("val shape", idx, val[:3], "val"))
        for name, i, v, want in cases:
            with self.subTest(name):
                with self.assertRaisesRegex(ValueError, re.escape(want)):
                    dainx.augment(i, v, **SMALL)
        for opts, want in [(dict(bogus=1), 'bogus=: unknown'), (dict(ratio="abc"), "ratio"),
                           (dict(epochs=True), "epochs"), (dict(quiet=1), "quiet"), (dict(method="magic"), "magic"),
                           (dict(input="x.tsv"), "input"), (dict(backend="tpu"), "tpu"),
                           (dict(ratio=float("nan")), "")]:
            with self.subTest(str(opts)):
                with self.assertRaisesRegex(ValueError, re.escape(want)):
                    dainx.augment(idx, val, **dict(SMALL, **opts))
        with self.assertRaisesRegex(RuntimeError, "every part must be non-empty"):
            dainx.augment(idx[:2], val[:2], **SMALL)

    def test_training_settings(self):
        # graphs and gemm_tune are the flags -graphs and -gemm-tune (issue
        # 32): the same defaults ($DAINX_CUDA_GRAPHS=0 makes graphs off),
        # graphs in the report, bad values a ValueError naming the option.
        idx, val = self.idx[:600], self.val[:600]
        default = "off" if os.environ.get("DAINX_CUDA_GRAPHS") == "0" else "on"
        _, _, report = dainx.augment(idx, val, **dict(SMALL, ratio=0.1))
        self.assertEqual(report["graphs"], default)
        _, _, report = dainx.augment(idx, val, **dict(SMALL, ratio=0.1, graphs="off", gemm_tune="off"))
        self.assertEqual(report["graphs"], "off")
        for opts, want in [(dict(graphs="maybe"), "want on or off"), (dict(gemm_tune="fast"), "gemm_tune")]:
            with self.subTest(str(opts)):
                with self.assertRaisesRegex(ValueError, re.escape(want)):
                    dainx.augment(idx, val, **dict(SMALL, **opts))

    def test_threads(self):
        results = [None, None]

        def run(i):
            results[i] = dainx.augment(self.idx, self.val, **dict(OPTS, seed=7 + i))

        ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for i in range(2):
            want_idx, want_val, _ = self.binary(7 + i)
            np.testing.assert_array_equal(results[i][0], want_idx)
            np.testing.assert_array_equal(results[i][1], want_val)

    def test_files(self):
        for name in ("a.tsv", "a.tns", "a.bin", "a.tsv.gz", "a.tns.gz"):
            p = os.path.join(self.tmp.name, name)
            dainx.write(p, self.idx, self.val)
            i, v = dainx.read(p)
            np.testing.assert_array_equal(i, self.idx)
            np.testing.assert_array_equal(v, self.val)
        p = os.path.join(self.tmp.name, "a.txt")
        dainx.write(p, self.idx, self.val, format="tns", index_base=1)
        with open(p) as f:
            self.assertEqual(f.readline().split()[:3], [str(x + 1) for x in self.idx[0]])
        i, _ = dainx.read(p, format="tns")
        np.testing.assert_array_equal(i, self.idx)
        with self.assertRaises(ValueError):
            dainx.read(os.path.join(self.tmp.name, "missing.tsv"))
        p = os.path.join(self.tmp.name, "bad.tsv")
        with open(p, "w") as f:
            f.write("0\t1\t2\t1.5\n3\t4\tx\t2\n")
        with self.assertRaisesRegex(ValueError, "bad.tsv:2"):
            dainx.read(p)


if __name__ == "__main__":
    unittest.main()
