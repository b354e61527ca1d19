"""dainx.DAIN on a pandas DataFrame with string IDs: fit, look at what DAIN
found, predict, save and load.

    python3 examples/python/estimator.py [--data ratings.tsv.gz] [--epochs 20] [--out ml-model]

The default data is MovieLens ml-latest-small (GroupLens), as a
user / movie / time-bin / rating TSV in ../shared/data. Progress goes to
the "dainx" logger (shown here with logging.basicConfig) and each epoch to
the progress callable. Ctrl-C stops the run and raises KeyboardInterrupt.
"""

import argparse
import logging
import os

import pandas as pd

import dainx

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "..", "shared", "data", "movielens_latest_small.tsv.gz")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT, help="user, item, time, rating TSV (default: MovieLens small)")
    ap.add_argument("--epochs", type=int, default=20, help="training epochs of every model (default 20)")
    ap.add_argument("--out", default="ml-model", help="directory to save the model in (default ml-model)")
    ap.add_argument("--synthetic", action="store_true", help="a small synthetic tensor instead of --data")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    if not args.synthetic and os.path.exists(args.data):
        df = pd.read_csv(args.data, sep="\t", header=None, names=["user", "movie", "time", "rating"])
    else:  # a small synthetic stand-in
        idx, val = _synthetic()
        df = pd.DataFrame({"user": idx[:, 0], "movie": idx[:, 1], "time": idx[:, 2], "rating": val})
    # String IDs, as user data has them.
    df["user"] = "user" + df["user"].astype(str)
    df["movie"] = "movie" + df["movie"].astype(str)

    def progress(e):
        if e.epoch == e.epochs or e.epoch % 5 == 0:
            print("  %-7s %-2s epoch %d/%d: validation MSE %.4f" % (e.stage, e.model, e.epoch, e.epochs, e.val_mse))

    model = dainx.DAIN(ratio=0.5, seed=7, epochs=args.epochs, backend="cpu", progress=progress)
    model.fit(df, index=["user", "movie", "time"], value="rating")
    r = model.report_
    print("test RMSE %.4f -> %.4f with %d new cells" % (r["rmse_before"], r["rmse_after"], r["n_aug"]))
    print(model.augmented_.head())
    imp = model.entity_importance_["movie"].sort_values(ascending=False)
    print("most important movies:", ", ".join("%s %.4f" % kv for kv in imp.head(5).items()))
    print(model.cell_scores_.sort_values("alpha", ascending=False).head())

    query = df.sample(5, random_state=1)
    query["predicted"] = model.predict(query)
    print(query)
    model.save(args.out)
    back = dainx.load(args.out)
    assert (back.predict(query) == query["predicted"].to_numpy()).all()
    print("saved to %s and loaded back: the same predictions (dainx predict -model %s reads it too)"
          % (args.out, args.out))


def _synthetic():
    """6000 distinct cells of a 60 × 80 × 10 tensor with ratings in 1…5."""
    import numpy as np
    rng = np.random.default_rng(1)
    cells = rng.choice(60 * 80 * 10, size=6000, replace=False)
    idx = np.stack(np.unravel_index(cells, (60, 80, 10)), axis=1)
    val = 1 + 4 * rng.random(len(idx))
    return idx, val


if __name__ == "__main__":
    main()
