"""Bad inputs from outside (issue 31), through the Python package: hostile
model files (dainx.predict, dainx.load) are ValueErrors naming the file and
the interpreter goes on; python.json is checked against the model at load
time; messages use the user's IDs and Python option names; save is one
transaction."""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np
import pandas as pd

import dainx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DAINX_BIN", os.path.join(ROOT, "dainx"))
OPTS = dict(seed=5, layers="24,8", epochs=1, ratio=0.2, backend="cpu", quiet=True, method="random")


def copy_model(src, dst, **replace):
    """src's model files copied to dst, with replace[name] = bytes instead."""
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        with open(os.path.join(src, name), "rb") as f:
            b = f.read()
        with open(os.path.join(dst, name), "wb") as f:
            f.write(replace.get(name.replace(".", "_"), b))
    return dst


def contents(d):
    """{name: bytes} of the files of directory d."""
    out = {}
    for n in os.listdir(d):
        with open(os.path.join(d, n), "rb") as f:
            out[n] = f.read()
    return out


class Untrusted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = os.path.join(cls.tmp.name, "t.tsv")
        subprocess.run([BIN, "synth", "-dims", "20,16,10", "-nnz", "600", "-rank", "2", "-seed", "3", "-output", t],
                       check=True, stdout=subprocess.DEVNULL)
        idx, val = (np.array(a) for a in dainx.read(t))
        cls.df = pd.DataFrame({"user": ["u%d" % i for i in idx[:, 0]], "item": ["i%d" % i for i in idx[:, 1]],
                               "time": idx[:, 2], "rating": val})
        cls.est = dainx.DAIN(**OPTS).fit(cls.df, value="rating")
        cls.good = os.path.join(cls.tmp.name, "good")
        cls.est.save(cls.good)
        with open(os.path.join(cls.good, "model.json"), "rb") as f:
            cls.meta = json.loads(f.read())
        with open(os.path.join(cls.good, "model.safetensors"), "rb") as f:
            cls.st = f.read()
        with open(os.path.join(cls.good, "python.json"), "rb") as f:
            cls.side = json.loads(f.read())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def dir(self, **replace):
        d = tempfile.mkdtemp(dir=self.tmp.name)
        return copy_model(self.good, d, **replace)

    def hostile(self):
        """(name, directory, file, expected text) of each hostile model."""
        meta = dict(self.meta, dims=[self.meta["dims"][0], 4 * 10 ** 12, self.meta["dims"][2]])
        n = struct.unpack("<Q", self.st[:8])[0]
        head = self.st[8:8 + n].decode()
        lie = head.replace('"data_offsets":[0,', '"data_offsets":[0,9', 1)
        lying = struct.pack("<Q", len(lie)) + lie.encode() + self.st[8 + n:]
        past = struct.pack("<Q", 1 << 62) + self.st[8:]
        return [
            ("dims 4e12", self.dir(model_json=json.dumps(meta).encode()), "model.json",
             "model.json: dims[1] = 4000000000000: above the limit 2147483647"),
            ("truncated", self.dir(model_safetensors=self.st[:-9]), "model.safetensors", "(truncated?)"),
            ("header lies", self.dir(model_safetensors=lying), "model.safetensors", "data_offsets [0, 9"),
            ("header length", self.dir(model_safetensors=past), "model.safetensors", "runs past the end"),
        ]

    def test_hostile_model(self):
        for name, d, f, want in self.hostile():
            for call in (lambda: dainx.predict(d, np.zeros((1, 3), np.int32)), lambda: dainx.load(d)):
                with self.subTest(name):
                    with self.assertRaises(ValueError) as cm:
                        call()
                    msg = str(cm.exception)
                    self.assertIn(want, msg)
                    self.assertIn(os.path.join(d, f), msg)
                    self.assertNotIn("\n", msg)
        # The interpreter goes on: the good model still predicts.
        self.assertEqual(dainx.load(self.good).predict(self.df.head(3)).shape, (3,))

    def test_hostile_model_subprocess(self):
        # In a child: a crash (out of memory, abort) would be its exit code.
        d = self.hostile()[0][1]
        code = ("import dainx, sys\ntry:\n    dainx.load(sys.argv[1])\nexcept ValueError as e:\n"
                "    print('ValueError:', e)\nprint('alive')\n")
        p = subprocess.run([sys.executable, "-c", code, d], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("dims[1] = 4000000000000", p.stdout)
        self.assertTrue(p.stdout.endswith("alive\n"), p.stdout)

    def test_python_json(self):
        side = self.side
        n_items = len(side["entities"][1])

        def edit(**kw):
            return dict(side, **kw)

        missing = dict(side)
        del missing["options"]
        cases = [
            ("entities length", edit(entities=[side["entities"][0], side["entities"][1][:-1], side["entities"][2]]),
             "entities[1]: %d IDs for column 'item', the model's mode 2 has %d" % (n_items - 1, n_items)),
            ("entities count", edit(entities=side["entities"][:2]), "entities: want a list of 3 ID lists"),
            ("index count", edit(index=["user", "item"]), "index: 2 columns, the model's order is 3"),
            ("index type", edit(index="user"), "index: want a list of column names"),
            ("value type", edit(value=7), "value: want the value column's name"),
            ("ID type", edit(entities=[[{"a": 1}] + side["entities"][0][1:]] + side["entities"][1:]),
             "entities[0][0]: an ID must be a string, number or boolean, got dict"),
            ("options type", edit(options=[1, 2]), "options: want an object, got list"),
            ("report type", edit(report="x"), "report: want an object or null"),
            ("missing key", missing, "options: missing"),
            ("format", edit(format="other" * 40), "format: 'otherother"),
            ("not an object", [1, 2], "want a JSON object, got list"),
        ]
        for name, obj, want in cases:
            with self.subTest(name):
                d = self.dir(python_json=json.dumps(obj).encode())
                with self.assertRaises(ValueError) as cm:
                    dainx.load(d)
                self.assertIn(os.path.join(d, "python.json"), str(cm.exception))
                self.assertIn(want, str(cm.exception))
        for name, raw, want in [("not JSON", b"{nope", "not JSON"), ("not UTF-8", b"\xff\xfe{}", "not UTF-8"),
                                ("empty", b"", "not JSON")]:
            with self.subTest(name):
                with self.assertRaisesRegex(ValueError, want):
                    dainx.load(self.dir(python_json=raw))

    def test_duplicate_ids(self):
        df = pd.concat([self.df, self.df.iloc[[7]]], ignore_index=True)
        u, i, t = self.df.iloc[7][["user", "item", "time"]]
        want = "duplicate cell (user=%r, item=%r, time=%r): row %d repeats row 7" % (u, i, int(t), len(self.df))
        with self.assertRaises(ValueError) as cm:
            dainx.DAIN(**OPTS).fit(df, value="rating")
        self.assertIn(want, str(cm.exception))

    def test_option_names(self):
        idx = np.array([[0, 0, 0], [1, 2, 3], [2, 1, 0], [3, 3, 3]])
        for opts, want in [(dict(layers="10,4"), "layers=10,4: the first layer width 10"),
                           (dict(ratio=0), "ratio= must be > 0; 0 draws no cells"),
                           (dict(batch=10 ** 12), "batch=1000000000000: want 1…16777216 cells"),
                           (dict(test_frac=2), "test")]:
            with self.subTest(str(opts)):
                with self.assertRaises(ValueError) as cm:
                    dainx.augment(idx, np.ones(4), **dict(OPTS, **opts))
                self.assertIn(want, str(cm.exception))
                self.assertNotRegex(str(cm.exception), r"(^|\s)-[a-z]")
        with self.assertRaisesRegex(ValueError, "batch=: 1000000000000: want 1…16777216 cells"):
            dainx.predict(self.good, np.zeros((1, 3), np.int32), batch=10 ** 12)

    def test_save_transaction(self):
        parent = tempfile.mkdtemp(dir=self.tmp.name)
        path = os.path.join(parent, "m")
        self.est.save(path)
        before = contents(path)
        # A save that fails half-way leaves the older save as it was, and
        # nothing of its own.
        with mock.patch("os.fsync", side_effect=OSError("disk full")):
            with self.assertRaisesRegex(OSError, "disk full"):
                self.est.save(path)
        self.assertEqual(os.listdir(parent), ["m"])
        self.assertEqual(contents(path), before)
        real = os.rename
        calls = []

        def rename(a, b):  # the new directory's rename fails, after the old one was moved aside
            calls.append(a)
            if len(calls) == 2:
                raise OSError("rename failed")
            return real(a, b)

        with mock.patch("os.rename", side_effect=rename):
            with self.assertRaisesRegex(OSError, "rename failed"):
                self.est.save(path)
        self.assertEqual(os.listdir(parent), ["m"])
        self.assertEqual(contents(path), before)
        # A save over an older one replaces it whole.
        self.est.save(path)
        self.assertEqual(sorted(os.listdir(parent)), ["m"])
        self.assertEqual(dainx.load(path).predict(self.df.head(2)).shape, (2,))
        # A file, or a directory holding other files, is refused.
        f = os.path.join(parent, "file")
        open(f, "w").close()
        with self.assertRaisesRegex(ValueError, "exists and is not a directory"):
            self.est.save(f)
        open(os.path.join(path, "mine.txt"), "w").close()
        with self.assertRaisesRegex(ValueError, "'mine.txt', not only a saved model's files"):
            self.est.save(path)
        self.assertTrue(os.path.exists(os.path.join(path, "mine.txt")))


if __name__ == "__main__":
    unittest.main()
