"""run_myfm.py: myFM's Gibbs-sampling regressor on one split written by
bench/peers/libfm/libfmdata (train.libfm, test.libfm, split.json), for
bench/peers/myfm/run.sh.

Each libFM line is a cell: its value, then one "j:1" feature per mode, with
j = (sizes of the modes before it) + the cell's index in that mode. The
features of all lines therefore form the one-hot encodings of the modes'
indices, concatenated: a scipy.sparse CSR matrix with sum(dims) columns.
With -groups per-mode, myFM gets group_shapes = dims (each mode's one-hot
block is its own prior group, as libFM's -meta); with -groups one, a single
group for all columns (myFM's default, libFM without -meta).

The model is trained on the training cells only (the validation cells are
not read) and predicts the test cells with the posterior predictive mean
over the kept samples. The predictions go to -pred (one per line, %.17g)
and one JSON object goes to stdout: the test RMSE, the number of cells, the
fit and predict times and the settings.

    python3 run_myfm.py -dir DIR -rank 32 -n-iter 200 -n-kept 200 -seed 1 -groups per-mode
"""

import argparse
import json
import math
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sps


def read_libfm(path, n_features, order):
    """The cells of a libFM file with `order` binary features per line: a
    CSR matrix (rows = cells, n_features columns) and the values."""
    values = []
    cols = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != order + 1:
                raise ValueError(f"{path}:{lineno}: want a value and {order} features, got {len(parts) - 1}")
            values.append(float(parts[0]))
            for p in parts[1:]:
                j, x = p.split(":")
                if x != "1":
                    raise ValueError(f"{path}:{lineno}: feature {p}: want binary features")
                cols.append(int(j))
    n = len(values)
    cols = np.asarray(cols, dtype=np.int64)
    if n and (cols.min() < 0 or cols.max() >= n_features):
        raise ValueError(f"{path}: feature index outside [0, {n_features})")
    indptr = np.arange(0, n * order + 1, order, dtype=np.int64)
    data = np.ones(n * order, dtype=np.float64)
    x = sps.csr_matrix((data, cols, indptr), shape=(n, n_features))
    return x, np.asarray(values, dtype=np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-dir", required=True, help="libfmdata's output directory (train.libfm, test.libfm, split.json)")
    ap.add_argument("-rank", type=int, default=32)
    ap.add_argument("-n-iter", type=int, default=200, help="Gibbs sweeps")
    ap.add_argument("-n-kept", type=int, default=None,
                    help="samples kept for the predictive mean (the last N sweeps); default n_iter (all, as libFM); "
                         "0: myFM's default, max(n_iter-5, 5)")
    ap.add_argument("-seed", type=int, default=1, help="myFM's random_seed")
    ap.add_argument("-init-stdev", type=float, default=0.1, help="myFM's init_stdev (its default, as libFM's)")
    ap.add_argument("-groups", choices=["per-mode", "one"], default="per-mode")
    ap.add_argument("-pred", default=None, help="write the test predictions here")
    a = ap.parse_args()

    with open(f"{a.dir}/split.json") as f:
        split = json.load(f)
    dims = [int(d) for d in split["dims"]]
    n_features = sum(dims)

    t0 = time.perf_counter()
    x_train, y_train = read_libfm(f"{a.dir}/train.libfm", n_features, len(dims))
    x_test, y_test = read_libfm(f"{a.dir}/test.libfm", n_features, len(dims))
    if len(y_train) != split["n_train"] or len(y_test) != split["n_test"]:
        raise SystemExit("run_myfm.py: the libFM files do not hold split.json's n_train and n_test cells")
    t_load = time.perf_counter() - t0

    import myfm  # from PYTHONPATH (run.sh puts its build there)

    n_kept = a.n_iter if a.n_kept is None else a.n_kept
    n_kept_arg = None if n_kept == 0 else n_kept  # None: myFM's default
    group_shapes = dims if a.groups == "per-mode" else None

    model = myfm.MyFMRegressor(rank=a.rank, init_stdev=a.init_stdev, random_seed=a.seed)
    t1 = time.perf_counter()
    model.fit(x_train, y_train, n_iter=a.n_iter, n_kept_samples=n_kept_arg, group_shapes=group_shapes)
    t2 = time.perf_counter()
    pred = model.predict(x_test, n_workers=1)
    t3 = time.perf_counter()

    pred = np.asarray(pred, dtype=np.float64)
    if pred.shape != y_test.shape or not np.all(np.isfinite(pred)):
        raise SystemExit("run_myfm.py: myFM returned no finite prediction for every test cell")
    rmse = math.sqrt(float(np.mean((pred - y_test) ** 2)))
    if a.pred:
        with open(a.pred, "w") as f:
            for p in pred:
                f.write("%.17g\n" % p)
    kept = n_kept_arg if n_kept_arg is not None else min(max(a.n_iter - 5, 5), a.n_iter)
    json.dump({
        "rmse": round(rmse, 6),
        "n_train": len(y_train), "n_test": len(y_test), "dims": dims,
        "load_seconds": round(t_load, 2), "fit_seconds": round(t2 - t1, 2), "predict_seconds": round(t3 - t2, 2),
        "rank": a.rank, "n_iter": a.n_iter, "n_kept_samples": kept, "myfm_seed": a.seed,
        "init_stdev": a.init_stdev, "group_shapes": "per mode" if group_shapes else "one group",
        "group_sizes": group_shapes, "python": sys.version.split()[0],
        "numpy": np.__version__, "scipy": scipy.__version__,
    }, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
