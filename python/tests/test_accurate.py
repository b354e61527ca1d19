"""Tests of dainx.DAIN(preset="accurate") (make test-python, issue 47):
the Bayesian factorization machine the preset chooses fits, predicts,
saves, loads, pickles and folds in new users (partial_fit)."""

import os
import pickle
import subprocess
import tempfile
import unittest

import numpy as np

import dainx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("DAINX_BIN", os.path.join(ROOT, "dainx"))


class Accurate(unittest.TestCase):
    def test_fit_predict_save_load_partial_fit(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.tsv")
            subprocess.run([BIN, "synth", "-dims", "40,30,5", "-nnz", "2500", "-rank", "3", "-seed", "4",
                            "-output", path], check=True, stdout=subprocess.DEVNULL)
            idx, val = (np.array(a) for a in dainx.read(path))
            new = idx[:, 0] >= 35  # users 35…39 come later, through partial_fit
            est = dainx.DAIN(preset="accurate", final_model="bayes-fm", bayes_samples=30, layers="12,8",
                             epochs=2, seed=2, backend="cpu", quiet=True)
            est.fit(idx[~new], val[~new])
            self.assertEqual(est.report_["final_model"], "bayes-fm")
            q = idx[~new][:50]
            p = est.predict(q)
            self.assertEqual(p.shape, (50,))
            self.assertTrue(np.all(np.isfinite(p)))
            d = os.path.join(tmp, "m")
            est.save(d)
            self.assertEqual(dainx.load(d).predict(q).tolist(), p.tolist())
            self.assertEqual(pickle.loads(pickle.dumps(est)).predict(q).tolist(), p.tolist())
            # New users: half of their cells folded in, the other half
            # predicted; the known cells' predictions do not move.
            ni, nv = idx[new], val[new]
            est.partial_fit(ni[::2], nv[::2])
            self.assertEqual(est.fold_in_report_["kind"], "bayes-fm")
            self.assertEqual(est.fold_in_report_["new_entities"][0], 5)
            self.assertEqual(est.predict(q).tolist(), p.tolist())
            held = est.predict(ni[1::2])
            rmse = float(np.sqrt(np.mean((held - nv[1::2]) ** 2)))
            # Against predicting every new user's cells by the mean: fold-in
            # must have learnt the users.
            base = float(np.sqrt(np.mean((nv[1::2] - val[~new].mean()) ** 2)))
            self.assertLess(rmse, 0.8 * base, (rmse, base))

    def test_ensemble_save_load(self):
        """-final-model ensemble: the stack and its members saved; a load
        and a pickle predict the same; fold-in refuses it."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.tsv")
            subprocess.run([BIN, "synth", "-dims", "30,20,5", "-nnz", "1500", "-rank", "3", "-seed", "5",
                            "-output", path], check=True, stdout=subprocess.DEVNULL)
            idx, val = (np.array(a) for a in dainx.read(path))
            est = dainx.DAIN(final_model="ensemble", bayes_samples=10, layers="12,8", epochs=2, seed=3,
                             backend="cpu", quiet=True)
            est.fit(idx, val)
            self.assertEqual(est.report_["final_model"], "ensemble")
            self.assertIn("model.bayes-fm.safetensors", est._model_files)
            q = idx[:40]
            p = est.predict(q)
            self.assertTrue(np.all(np.isfinite(p)))
            d = os.path.join(tmp, "m")
            est.save(d)
            self.assertEqual(dainx.load(d).predict(q).tolist(), p.tolist())
            self.assertEqual(pickle.loads(pickle.dumps(est)).predict(q).tolist(), p.tolist())
            with self.assertRaisesRegex(ValueError, "ensemble"):
                est.partial_fit(idx[:20], val[:20])


if __name__ == "__main__":
    unittest.main()
