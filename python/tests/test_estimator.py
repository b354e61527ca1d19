"""Tests of dainx.DAIN (make test-python): a DataFrame of string IDs,
clone, predict, save/load (and models saved by the command line),
unknown IDs, progress and the logger, Ctrl-C, checkpoint/resume."""

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

import numpy as np
import pandas as pd
import sklearn.base

import dainx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DAINX_BIN", os.path.join(ROOT, "dainx"))
OPTS = dict(seed=5, layers="24,8", epochs=3, ratio=0.5, backend="cpu")


def frame(idx, val):
    """A DataFrame of string IDs over integer cells: "u7", "i12", "t3"."""
    return pd.DataFrame({"user": ["u%d" % i for i in idx[:, 0]], "item": ["i%d" % i for i in idx[:, 1]],
                         "time": ["t%d" % i for i in idx[:, 2]], "rating": val})


class Estimator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "t.tsv")
        subprocess.run([BIN, "synth", "-dims", "30,40,20", "-nnz", "3000", "-rank", "3", "-seed", "3",
                        "-output", cls.path], check=True, stdout=subprocess.DEVNULL)
        cls.idx, cls.val = (np.array(a) for a in dainx.read(cls.path))
        cls.df = frame(cls.idx, cls.val)
        cls.split = os.path.join(cls.tmp.name, "split")
        cls.est = dainx.DAIN(split_out=cls.split, **OPTS).fit(cls.df, index=["user", "item", "time"], value="rating")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_dataframe_ids(self):
        e, df = self.est, self.df
        self.assertEqual(e.index_, ["user", "item", "time"])
        self.assertEqual(e.value_, "rating")
        aug = e.augmented_
        self.assertEqual(list(aug.columns), ["user", "item", "time", "rating"])
        self.assertEqual(len(aug), e.report_["n_aug"])
        self.assertGreater(len(aug), 0)
        for c in ("user", "item", "time"):
            self.assertTrue(set(aug[c]) <= set(df[c]), c)
        # No new cell is a training or validation cell (test cells are
        # unknown to the sampler, as in the paper).
        seen = set()
        for part in ("train.tsv", "val.tsv"):
            codes = pd.read_csv(os.path.join(self.split, part), sep="\t", header=None)
            seen |= set(zip(*(e.entities_[m][codes[m].to_numpy()] for m in range(3))))
        self.assertEqual(len(seen), e.report_["n_train"] + e.report_["n_val"])
        self.assertFalse(seen & set(map(tuple, aug[["user", "item", "time"]].to_numpy())), "a new cell is an observed cell")
        # The same run on the codes pandas gives the IDs: the same new cells.
        codes = np.stack([pd.factorize(df[c])[0] for c in ("user", "item", "time")], axis=1)
        ai, av, rep = dainx.augment(codes, df["rating"].to_numpy(), quiet=True, **OPTS)
        self.assertEqual(rep["rmse_after"], e.report_["rmse_after"])
        np.testing.assert_array_equal(av, aug["rating"].to_numpy())
        for m, c in enumerate(("user", "item", "time")):
            np.testing.assert_array_equal(e.entities_[m][ai[:, m]], aug[c].to_numpy())

    def test_scores_and_importance(self):
        e = self.est
        cs = e.cell_scores_
        self.assertEqual(list(cs.columns), ["user", "item", "time", "rating", "alpha", "score"])
        self.assertEqual(len(cs), e.report_["n_train"])
        np.testing.assert_array_equal(cs["alpha"].to_numpy(), np.abs(cs["score"].to_numpy()))
        train = pd.read_csv(os.path.join(self.split, "train.tsv"), sep="\t", header=None)
        for m, c in enumerate(("user", "item", "time")):
            np.testing.assert_array_equal(e.entities_[m][train[m].to_numpy()], cs[c].to_numpy())
        self.assertEqual(sorted(e.entity_importance_), ["item", "time", "user"])
        for m, c in enumerate(("user", "item", "time")):
            s = e.entity_importance_[c]
            self.assertEqual(s.index.name, c)
            self.assertTrue(s.index.equals(e.entities_[m]))
            self.assertAlmostEqual(s.sum(), 1, places=9)
            # Importance is each entity's share of Σα over the training cells.
            want = cs.groupby(c)["alpha"].sum().astype(np.float64)
            want = (want / want.sum()).reindex(s.index, fill_value=0)
            np.testing.assert_allclose(s.to_numpy(), want.to_numpy(), rtol=1e-4, atol=1e-9)

    def test_arrays(self):
        e = dainx.DAIN(quiet=True, **OPTS).fit(self.idx, self.val)
        ai, av = e.augmented_
        i2, v2, rep = dainx.augment(self.idx, self.val, quiet=True, **OPTS)
        np.testing.assert_array_equal(ai, i2)
        np.testing.assert_array_equal(av, v2)
        self.assertEqual(e.cell_scores_.idx.shape, (rep["n_train"], 3))
        self.assertEqual(sorted(e.entity_importance_), [0, 1, 2])
        self.assertEqual(e.entity_importance_[1].shape, (40,))
        p = e.predict(self.idx[:50])
        np.testing.assert_array_equal(e.predict(pd.DataFrame(self.idx[:50], columns=["a", "b", "c"])), p)
        with self.assertRaisesRegex(ValueError, "integer"):
            e.predict(self.df[["user", "item", "time"]])
        with self.assertRaisesRegex(ValueError, "outside"):
            e.predict(np.array([[0, 40, 0]]))
        r = dainx.DAIN(method="random", quiet=True, **OPTS).fit(self.idx, self.val)
        self.assertIsNone(r.cell_scores_)
        self.assertIsNone(r.entity_importance_)

    def test_clone(self):
        progress = []
        e = dainx.DAIN(epochs=4, layers=[24, 8], progress=progress.append)
        c = sklearn.base.clone(e)
        self.assertEqual(c.get_params(), e.get_params())
        self.assertIsNot(c, e)
        self.assertFalse(hasattr(c, "report_"))
        c2 = sklearn.base.clone(self.est)
        self.assertFalse(hasattr(c2, "augmented_"))
        self.assertEqual(c2.get_params()["seed"], 5)
        self.assertIs(e.set_params(epochs=2), e)
        self.assertEqual(e.get_params()["epochs"], 2)
        self.assertIn("epochs=2", repr(e))

    def test_predict(self):
        e = self.est
        test = pd.read_csv(os.path.join(self.split, "test.tsv"), sep="\t", header=None)
        q = frame(test[[0, 1, 2]].to_numpy(), test[3].to_numpy())
        # frame() names entities by their integer index; map back through
        # the estimator's IDs instead: test.tsv holds the codes.
        for m, c in enumerate(("user", "item", "time")):
            q[c] = e.entities_[m][test[m].to_numpy()]
        p = e.predict(q)
        self.assertEqual(p.shape, (len(q),))
        rmse = np.sqrt(np.mean((p - q["rating"].to_numpy()) ** 2))
        # The report's RMSE is accumulated in another order: 1e-6.
        self.assertAlmostEqual(rmse, e.report_["rmse_after"], delta=1e-6 * rmse)
        # Columns in another order, and an index= mapping.
        np.testing.assert_array_equal(e.predict(q[["time", "rating", "item", "user"]]), p)
        q2 = q.rename(columns={"user": "u"})
        np.testing.assert_array_equal(e.predict(q2, index=["u", "item", "time"]), p)
        self.assertEqual(e.predict(q.iloc[:0]).shape, (0,))

    def test_unknown_ids(self):
        q = self.df.head(3).copy()
        q.loc[q.index[0], "user"] = "nobody"
        q.loc[q.index[1], "item"] = "no-item"
        with self.assertRaisesRegex(ValueError, "unknown ID in column 'user': 'nobody'"):
            self.est.predict(q)
        with self.assertRaisesRegex(ValueError, "not fitted"):
            dainx.DAIN().predict(q)
        with self.assertRaisesRegex(ValueError, "'nope': no such column"):
            dainx.DAIN(**OPTS).fit(self.df, index=["user", "item", "time"], value="nope")
        bad = self.df.copy()
        bad.loc[bad.index[5], "rating"] = np.nan
        with self.assertRaisesRegex(ValueError, "row 5"):
            dainx.DAIN(**OPTS).fit(bad, value="rating")
        with self.assertRaisesRegex(ValueError, 'magic=: unknown'):
            dainx.DAIN(magic=3, quiet=True).fit(self.idx, self.val)

    def test_save_load(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m")
            self.est.save(path)
            self.assertEqual(sorted(os.listdir(path)),
                             ["dictionaries.json", "model.json", "model.safetensors", "python.json"])
            back = dainx.load(path)
            q = self.df.sample(200, random_state=1)
            np.testing.assert_array_equal(back.predict(q), self.est.predict(q))
            self.assertEqual(back.get_params()["seed"], 5)
            self.assertEqual(back.report_["rmse_after"], self.est.report_["rmse_after"])
            # The command line reads what Python saved.
            codes = np.stack([self.est.entities_[m].get_indexer(q[c]) for m, c in enumerate(self.est.index_)], 1)
            cells = os.path.join(d, "q.tsv")
            np.savetxt(cells, codes, fmt="%d", delimiter="\t")
            out = os.path.join(d, "p.tsv")
            subprocess.run([BIN, "predict", "-model", path, "-cells", cells, "-output", out], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cli = pd.read_csv(out, sep="\t", header=None)
            np.testing.assert_allclose(cli[3].to_numpy(), back.predict(q), rtol=1e-6)
            # ... and takes the cells by ID through dictionaries.json.
            qcsv, pcsv = os.path.join(d, "q.csv"), os.path.join(d, "p.csv")
            q[["item", "user", "time"]].to_csv(qcsv, index=False)
            subprocess.run([BIN, "predict", "-model", path, "-input", qcsv, "-index", "user,item,time",
                            "-output", pcsv], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            by_id = pd.read_csv(pcsv)
            self.assertEqual(list(by_id.columns), ["user", "item", "time", "rating"])
            self.assertEqual(list(by_id["user"]), list(q["user"]))
            np.testing.assert_allclose(by_id["rating"].to_numpy(), back.predict(q), rtol=1e-6)
            with self.assertRaisesRegex(ValueError, "no such file"):
                dainx.load(os.path.join(d, "missing"))

    def test_load_cli_model(self):
        with tempfile.TemporaryDirectory() as d:
            mdir = os.path.join(d, "cli")
            subprocess.run([BIN, "augment", "-input", self.path, "-model-out", mdir, "-quiet", "-seed", "5",
                            "-layers", "24,8", "-epochs", "2", "-backend", "cpu"], check=True,
                           stdout=subprocess.DEVNULL)
            m = dainx.load(mdir)
            self.assertIsNone(m.index_)
            cells = os.path.join(d, "q.tsv")
            np.savetxt(cells, self.idx[:100], fmt="%d", delimiter="\t")
            out = os.path.join(d, "p.tsv")
            subprocess.run([BIN, "predict", "-model", mdir, "-cells", cells, "-output", out], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            want = pd.read_csv(out, sep="\t", header=None)[3].to_numpy()
            np.testing.assert_allclose(m.predict(self.idx[:100]), want, rtol=1e-6)
            p, rep = dainx.predict(mdir, self.idx[:100])
            np.testing.assert_array_equal(p, m.predict(self.idx[:100]))
            self.assertEqual(rep["n_cells"], 100)

    def test_load_cli_table_model(self):
        """A model of `dainx augment -index` (a CSV of IDs with a time
        column binned by day) loads with its dictionaries: predict takes a
        DataFrame of IDs and raw times (Unix seconds or ISO text) and gives
        what `dainx predict -index` gives; it saves and loads again."""
        with tempfile.TemporaryDirectory() as d:
            df = self.df.copy()
            df["time"] = 1600000000 + self.idx[:, 2] * 86400 + 3600
            table = os.path.join(d, "t.csv")
            df.to_csv(table, index=False)
            mdir = os.path.join(d, "cli")
            subprocess.run([BIN, "augment", "-input", table, "-index", "user,item,time:day", "-value", "rating",
                            "-model-out", mdir, "-quiet", "-seed", "5", "-layers", "24,8", "-epochs", "2",
                            "-backend", "cpu"], check=True, stdout=subprocess.DEVNULL)
            m = dainx.load(mdir)
            self.assertEqual(m.index_, ["user", "item", "time"])
            self.assertEqual(m.value_, "rating")
            q = df.sample(100, random_state=2)
            out = os.path.join(d, "p.csv")
            subprocess.run([BIN, "predict", "-model", mdir, "-input", table, "-index", "user,item,time",
                            "-output", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            want = pd.read_csv(out)["rating"].to_numpy()[q.index.to_numpy()]
            np.testing.assert_allclose(m.predict(q), want, rtol=1e-6)
            iso = q.assign(time=pd.to_datetime(q["time"], unit="s", utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
            np.testing.assert_array_equal(m.predict(iso), m.predict(q))
            late = q.head(1).assign(time=2000000000)
            with self.assertRaisesRegex(ValueError, "outside the model's"):
                m.predict(late)
            again = os.path.join(d, "again")
            m.save(again)
            np.testing.assert_array_equal(dainx.load(again).predict(q), m.predict(q))
            # The dictionaries are checked against the model (untrusted).
            dp = os.path.join(mdir, "dictionaries.json")
            with open(dp) as f:
                js = json.load(f)
            js["modes"][0]["ids"] = js["modes"][0]["ids"][:-1]
            with open(dp, "w") as f:
                json.dump(js, f)
            with self.assertRaisesRegex(ValueError, "dictionaries.json: modes\\[0\\].ids: want a list of"):
                dainx.load(mdir)

    def test_progress_and_logger(self):
        seen = []
        with self.assertLogs("dainx", "INFO") as logs:
            dainx.DAIN(progress=seen.append, **OPTS).fit(self.idx, self.val)
        stages = [(e.stage, e.model) for e in seen]
        self.assertEqual(sorted(set(stages)), [("predict", "Θc"), ("retrain", "Θ'"), ("train", "Θ")])
        for e in seen:
            self.assertIsInstance(e, dainx.Epoch)
            self.assertEqual(e.epochs, 3)
            self.assertTrue(1 <= e.epoch <= 3)
            self.assertGreater(e.train_mse, 0)
            self.assertGreater(e.val_mse, 0)
        self.assertEqual([e.epoch for e in seen if e.stage == "train"], [1, 2, 3])
        text = "\n".join(logs.output)
        self.assertRegex(text, r"Θ +epoch +1/3")
        self.assertIn("test RMSE", text)
        self.assertNotIn("dainx: dainx:", text)
        # quiet: nothing on the logger, the callable still called.
        seen.clear()
        with self.assertNoLogs("dainx", "INFO"):
            dainx.augment(self.idx, self.val, progress=seen.append, quiet=True, **OPTS)
        self.assertEqual(len([e for e in seen if e.stage == "retrain"]), 3)

        # An exception in the callable stops the run and comes out of fit.
        def boom(e):
            raise ZeroDivisionError("from the callback")
        with self.assertRaisesRegex(ZeroDivisionError, "from the callback"):
            dainx.DAIN(progress=boom, quiet=True, **OPTS).fit(self.idx, self.val)
        self.assertEqual(threading.active_count(), 1)

    def test_checkpoint_resume(self):
        opts = dict(OPTS, epochs=4, quiet=True)
        full = dainx.DAIN(**opts).fit(self.df, value="rating")

        class Stop(Exception):
            pass

        def stop_in_predict(e):
            if e.stage == "predict" and e.epoch == 2:
                raise Stop()
        with tempfile.TemporaryDirectory() as d:
            ck = os.path.join(d, "ck")
            with self.assertRaises(Stop):
                dainx.DAIN(checkpoint=ck, progress=stop_in_predict, **opts).fit(self.df, value="rating")
            self.assertTrue(os.listdir(ck))
            seen = []
            back = dainx.DAIN(checkpoint=ck, resume=True, progress=seen.append, **opts).fit(self.df, value="rating")
        self.assertNotIn("train", [e.stage for e in seen], "resume trained Θ again")
        pd.testing.assert_frame_equal(back.augmented_, full.augmented_)
        self.assertEqual(back.report_["rmse_after"], full.report_["rmse_after"])

    def test_ctrl_c(self):
        child = textwrap.dedent("""
            import os, sys, tempfile, threading, time
            import numpy as np
            import dainx
            idx, val = dainx.read(sys.argv[1])
            def progress(e):
                if e.epoch == 2:
                    print("training", flush=True)
            try:
                dainx.DAIN(layers="24,8", epochs=100000, patience=100000, backend="cpu", quiet=True,
                           progress=progress).fit(idx, val)
            except KeyboardInterrupt:
                print("interrupted", threading.active_count(), os.listdir(tempfile.gettempdir()), flush=True)
            """)
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TMPDIR=d)
            p = subprocess.Popen([sys.executable, "-c", child, self.path], stdout=subprocess.PIPE, text=True, env=env)
            try:
                self.assertEqual(p.stdout.readline().strip(), "training")
                time.sleep(0.3)
                t0 = time.monotonic()
                p.send_signal(signal.SIGINT)
                line = p.stdout.readline().strip()
                took = time.monotonic() - t0
                p.wait(10)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                p.stdout.close()
            self.assertEqual(line, "interrupted 1 []", "a thread or a temporary file was left behind")
            self.assertLess(took, 2.0)
            self.assertEqual(p.returncode, 0)
            self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()
