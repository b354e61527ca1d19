"""Tests of DAIN.partial_fit and dainx.fold_in (make test-python): new
users folded into a fitted model by ID and by index, the known entities'
predictions unchanged bit for bit, the same model as `dainx fold-in`,
save/load of the grown model, bad input."""

import io
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import pandas as pd

import dainx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DAINX_BIN", os.path.join(ROOT, "dainx"))
OPTS = dict(seed=5, layers="24,8", epochs=3, ratio=0.5, backend="cpu", quiet=True)
FOLD = dict(epochs=8, batch=64)


class FoldIn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(cls.tmp.name, "t.tsv")
        subprocess.run([BIN, "synth", "-dims", "30,40,20", "-nnz", "3000", "-rank", "3", "-seed", "3",
                        "-output", path], check=True, stdout=subprocess.DEVNULL)
        cls.idx, cls.val = (np.array(a) for a in dainx.read(path))
        cls.old = cls.idx[:, 0] < 25  # users 25…29 arrive later

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def frame(self, rows):
        i, v = self.idx[rows], self.val[rows]
        return pd.DataFrame({"user": ["u%d" % u for u in i[:, 0]], "item": ["i%d" % x for x in i[:, 1]],
                             "time": i[:, 2], "rating": v})

    def test_dataframe(self):
        old, new = self.frame(self.old), self.frame(~self.old)
        est = dainx.DAIN(**OPTS).fit(old, index=["user", "item", "time"], value="rating")
        known = est.predict(old)
        n_items = len(est.entities_[1])
        with self.assertRaisesRegex(ValueError, "unknown ID"):
            est.predict(new)
        self.assertIs(est.partial_fit(new, **FOLD), est)
        rep = est.fold_in_report_
        self.assertEqual(rep["new_entities"][0], 5)
        self.assertEqual(rep["tune"], "new")
        self.assertEqual(rep["n_train"] + rep["n_val"] + rep["n_skipped"], len(new))
        self.assertEqual(list(est.entities_[0][25:]), list(pd.unique(new["user"])))
        self.assertEqual(len(est.entities_[1]), n_items + rep["new_entities"][1])
        # The known cells' predictions are the model's, bit for bit; the
        # new users' are predicted.
        np.testing.assert_array_equal(est.predict(old), known)
        p = est.predict(new)
        self.assertTrue(np.isfinite(p).all())
        # Saved and loaded with the grown IDs.
        d = os.path.join(self.tmp.name, "df-model")
        est.save(d)
        np.testing.assert_array_equal(dainx.load(d).predict(new), p)

    def test_arrays_as_the_command(self):
        """partial_fit on arrays writes the model `dainx fold-in` writes,
        byte for byte (same cells, seed and flags)."""
        est = dainx.DAIN(**OPTS).fit(self.idx[self.old], self.val[self.old])
        d = os.path.join(self.tmp.name, "arr-model")
        est.save(d)
        cells = os.path.join(self.tmp.name, "new.tsv")
        dainx.write(cells, self.idx[~self.old], self.val[~self.old])
        out = os.path.join(self.tmp.name, "arr-folded")
        subprocess.run([BIN, "fold-in", "-model", d, "-input", cells, "-model-out", out, "-seed", "5",
                        "-backend", "cpu", "-quiet", "-epochs", "8", "-batch", "64"], check=True, stdout=subprocess.DEVNULL)
        est.partial_fit(self.idx[~self.old], self.val[~self.old], **FOLD)
        with open(os.path.join(out, "model.safetensors"), "rb") as f:
            self.assertEqual(est._model_files["model.safetensors"], f.read())
        with open(os.path.join(out, "model.json")) as f:
            self.assertEqual(est.fold_in_report_["dims"], json.load(f)["dims"])
        p, _ = dainx.predict(out, self.idx[~self.old][:5])
        np.testing.assert_array_equal(est.predict(self.idx[~self.old][:5]), p)

    def test_tune_all_and_progress(self):
        est = dainx.DAIN(**OPTS).fit(self.idx[self.old], self.val[self.old])
        known = est.predict(self.idx[self.old][:50])
        epochs = []
        est.partial_fit(self.idx[~self.old], self.val[~self.old], tune="all", progress=epochs.append, **FOLD)
        self.assertEqual(est.fold_in_report_["tune"], "all")
        self.assertTrue(epochs and all(e.stage == "fold-in" for e in epochs), epochs)
        self.assertEqual(epochs[-1].epochs, 8)
        self.assertFalse(np.array_equal(est.predict(self.idx[self.old][:50]), known))

    def test_cli_table_model(self):
        """A model trained by `dainx augment -index` (dictionaries.json)
        takes new IDs by partial_fit; saved, `dainx predict -index`
        answers for them."""
        i, v = self.idx, self.val
        df = pd.DataFrame({"user": ["u%d" % u for u in i[:, 0]], "item": ["i%d" % x for x in i[:, 1]],
                           "time": [1600000000 + 86400 * int(d) for d in i[:, 2]], "rating": v})
        csv = os.path.join(self.tmp.name, "old.csv")
        df[self.old].to_csv(csv, index=False)
        m = os.path.join(self.tmp.name, "cli-table-model")
        subprocess.run([BIN, "augment", "-input", csv, "-index", "user,item,time:day", "-value", "rating", "-model-out", m,
                        "-layers", "24,8", "-epochs", "2", "-backend", "cpu", "-quiet"], check=True, stdout=subprocess.DEVNULL)
        est = dainx.load(m)
        known = est.predict(df[self.old][["user", "item", "time"]])
        est.partial_fit(df[~self.old], backend="cpu", quiet=True, **FOLD)
        self.assertEqual(est.fold_in_report_["new_entities"][0], 5)
        np.testing.assert_array_equal(est.predict(df[self.old][["user", "item", "time"]]), known)
        saved = os.path.join(self.tmp.name, "cli-table-folded")
        est.save(saved)
        q = os.path.join(self.tmp.name, "q.csv")
        df[~self.old][["user", "item", "time"]].head(3).to_csv(q, index=False)
        out = subprocess.run([BIN, "predict", "-model", saved, "-input", q, "-index", "user,item,time"], check=True,
                             capture_output=True, text=True).stdout
        p = est.predict(df[~self.old][["user", "item", "time"]].head(3))
        got = pd.read_csv(io.StringIO(out))["rating"].to_numpy()
        np.testing.assert_allclose(got, p, rtol=1e-6)
        with self.assertRaisesRegex(ValueError, "partial_fit: column 'time'"):
            est.partial_fit(pd.DataFrame({"user": ["x"], "item": ["i1"], "time": [1700000000], "rating": [3.0]}))

    def test_errors(self):
        est = dainx.DAIN(**OPTS).fit(self.idx[self.old], self.val[self.old])
        before = dict(est._model_files)
        new_i, new_v = self.idx[~self.old], self.val[~self.old]
        for args, kw, msg in [
            ((np.unique(new_i[:, :2], axis=0), np.ones(len(np.unique(new_i[:, :2], axis=0)))), {},
             "order 2, the model's order is 3"),
            ((np.array([[4000, 0, 0]]), [1.0]), {}, "would add 3976 new entities"),
            ((self.idx[self.old][:5], self.val[self.old][:5]), {}, "no new entity"),
            ((new_i, new_v), {"val_frac": 2}, "val_frac=2: want 0 ≤ share < 1"),
            ((new_i,), {}, "values are missing"),
            ((new_i, new_v), {"model_out": "x"}, 'option "model_out"'),
        ]:
            with self.assertRaisesRegex(ValueError, msg):
                est.partial_fit(*args, **kw)
        self.assertEqual(est._model_files, before)
        df_est = dainx.DAIN(**OPTS).fit(self.frame(self.old), index=["user", "item", "time"], value="rating")
        bad = self.frame(~self.old)
        bad.loc[bad.index[3], "rating"] = "x"
        with self.assertRaisesRegex(ValueError, "not a finite number"):
            df_est.partial_fit(bad)
        with self.assertRaisesRegex(ValueError, "duplicate cell"):
            df_est.partial_fit(pd.concat([self.frame(~self.old), self.frame(~self.old).head(1)]))
        with self.assertRaisesRegex(ValueError, "fitted on a DataFrame"):
            df_est.partial_fit(new_i, new_v)


if __name__ == "__main__":
    unittest.main()
