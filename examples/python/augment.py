"""DAIN from Python: augment a tensor and print the test RMSE before and
after (PYTHONPATH=build/python python3 examples/python/augment.py [FILE]).

With no file it makes a small rank-3 tensor with numpy."""
import argparse

import numpy as np

import dainx

ap = argparse.ArgumentParser()
ap.add_argument("tensor", nargs="?", help="DAIN TSV, FROSTT .tns or SPLATT .bin file")
ap.add_argument("--epochs", type=int, default=5)
ap.add_argument("--output", help="write the new cells here")
args = ap.parse_args()

if args.tensor:
    idx, val = dainx.read(args.tensor)
else:  # 3000 distinct cells of a 30x30x30 rank-3 tensor
    rng = np.random.default_rng(1)
    flat = rng.choice(30 ** 3, size=3000, replace=False)
    idx = np.stack(np.unravel_index(flat, (30, 30, 30)), axis=1)
    a, b, c = (rng.random((30, 3)) for _ in range(3))
    val = np.einsum("nr,nr,nr->n", a[idx[:, 0]], b[idx[:, 1]], c[idx[:, 2]])

aug_idx, aug_val, report = dainx.augment(idx, val, ratio=0.5, seed=7, layers="48,16",
                                         epochs=args.epochs, quiet=True)
print("dainx %s on %d cells: %d new cells, test RMSE %.6f -> %.6f"
      % (dainx.version(), len(val), len(aug_val), report["rmse_before"], report["rmse_after"]))
if args.output:
    dainx.write(args.output, aug_idx, aug_val)
