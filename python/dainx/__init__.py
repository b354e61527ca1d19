"""dainx: DAIN, influence-guided data augmentation for neural tensor
completion (Oh, Kim, Rossi, Kumar, CIKM 2021), over libdainx.

An estimator over pandas (IDs of any hashable type) or index arrays::

    import dainx, pandas as pd
    df = pd.read_csv("ratings.tsv", sep="\\t", names=["user", "movie", "rating"])
    model = dainx.DAIN(ratio=0.5, seed=7, epochs=20).fit(df, index=["user", "movie"], value="rating")
    model.augmented_            # the new cells, with the original IDs
    model.entity_importance_    # {"user": Series, "movie": Series}
    model.predict(df.head())    # predicted ratings
    model.save("ml-model")      # a -model-out directory; dainx.load("ml-model")

or one function on arrays::

    idx, val = dainx.read("ratings.tsv")            # (nnz, order) int32, (nnz,) float64
    aug_idx, aug_val, report = dainx.augment(idx, val, ratio=0.5, seed=7, layers="48,16", epochs=3)
    dainx.write("new.tsv", aug_idx, aug_val)

augment() and DAIN take the flags of ``dainx augment`` as keyword
arguments (``test_frac`` for ``-test-frac``) and give the same cells,
values and report as the command for the same cells, seed and flags.
Progress goes to ``logging.getLogger("dainx")`` (INFO) and to an optional
``progress`` callable (one ``Epoch`` per training epoch); Ctrl-C stops a
run within a fraction of a second and raises KeyboardInterrupt.

Errors: ValueError for bad input or a bad option (the message names the
cell or the option), RuntimeError when the run fails (a CUDA error, too
few new cells reachable). The library is thread-safe; a run releases the
GIL, so several threads can run at once.
"""

import json
import logging
import os
import sys

from . import _native
from ._native import Epoch, library_path, version

__all__ = ["DAIN", "CellScores", "Epoch", "augment", "fold_in", "load", "predict", "read", "write", "version",
           "library_path", "__version__"]

__version__ = version()

logger = logging.getLogger("dainx")


def _reporter(progress, quiet):
    """on_event for _native.run_augment: messages to the "dainx" logger
    (or standard error with progress="stderr"), epochs to progress."""
    if progress is not None and progress != "stderr" and not callable(progress):
        raise ValueError('progress: want a callable, "stderr" or None, got %r' % (progress,))

    def on_event(ev):
        kind = ev.get("event")
        if kind == "tick":
            return
        msg = ev.get("message")
        if msg and not quiet:
            if progress == "stderr":
                sys.stderr.write(msg + "\n")
                sys.stderr.flush()
            else:
                logger.info("%s", msg[len("dainx: "):] if msg.startswith("dainx: ") else msg)
        if kind == "epoch" and callable(progress):
            progress(_native.epoch_of(ev))

    return on_event


def _augment(idx, val, options, progress):
    """(ptr, owner-less result pointer) of a run on the cells; see augment."""
    if "input" in options:
        raise ValueError('option "input": the cells are passed in memory (idx, val); read a file with dainx.read')
    i32, f64 = _native.cells(idx, val)
    return _native.run_augment(i32, f64, _native.options_json(options),
                               _reporter(progress, bool(options.get("quiet"))))


def augment(idx, val, progress=None, **options):
    """Run DAIN (``dainx augment``) on the cells idx, val.

    idx: (nnz, order) integer array of 0-based indices (any integer dtype;
        int32 C-contiguous arrays are passed without a copy). The mode sizes
        are the largest index of each mode + 1.
    val: (nnz,) float array of values.
    progress: None (progress lines go to the "dainx" logger at INFO), a
        callable that gets an Epoch after every training epoch (and the
        lines still go to the logger), or "stderr" (the lines go to
        standard error, as the command prints them).
    options: the flags of ``dainx augment`` without the dash, ``_`` for
        ``-`` (ratio=0.5, seed=7, layers="48,16" or [48, 16], epochs=3,
        backend="cpu", quiet=True, test_frac=0.1, method="random",
        checkpoint="dir", resume=True, model_out="dir", graphs="off",
        gemm_tune="time", gemm_serial="on", …); None leaves a flag at its
        default, the command's (graphs: on, or off when
        $DAINX_CUDA_GRAPHS=0; gemm_tune: $DAINX_GEMM_TUNE, else off;
        gemm_serial: on when $DAINX_GEMM_SERIAL=1, else off). "input" is
        refused (the cells are the input); "output", "report",
        "model_out", "scores_out", … also write files.

    Returns (aug_idx, aug_val, report): aug_idx (n_aug, order) int32 and
    aug_val (n_aug,) float64, the new cells and their predicted values
    (arrays over the library's memory, no copy), and the report as a dict
    (rmse_before, rmse_after, n_aug, seconds, history_before, …).

    Raises ValueError for bad cells (negative index, index outside int32,
    NaN or infinite value, duplicate cell, nnz or order 0) or a bad option
    (unknown key, bad value), naming the cell or option; RuntimeError when
    the run fails; KeyboardInterrupt on Ctrl-C (the run stops at its next
    training step; with checkpoint=, resume=True goes on from there).
    """
    ptr = _augment(idx, val, options, progress)
    aug_idx, aug_val, report, _ = _native.arrays(ptr)
    return aug_idx, aug_val, json.loads(report)


def read(path, format=None, index_base=None):
    """Read a tensor file as ``dainx augment -input`` does.

    path: DAIN TSV, FROSTT .tns or SPLATT .bin, gzip detected by content.
    format: "tsv", "tns" or "bin"; None: by extension (.tns[.gz] tns, .bin
        bin, else tsv).
    index_base: the file's index base; None: the format's own (tsv 0,
        tns 1, bin 0).

    Returns (idx, val): (nnz, order) int32 0-based indices and (nnz,)
    float64 values, in file order (no copy). Raises ValueError for a
    missing file or bad content ("file:line: reason").
    """
    ptr = _native.ctypes.c_void_p()
    _native.check(_native.lib.dainx_read(os.fsencode(path),
                                         _native.options_json({"format": format, "index_base": index_base}),
                                         _native.ctypes.byref(ptr)))
    idx, val, _, _ = _native.arrays(ptr)
    return idx, val


def write(path, idx, val, format=None, index_base=None):
    """Write cells as ``dainx augment -output`` does.

    idx: (nnz, order) integer array of 0-based indices; val: (nnz,) floats.
    format, index_base: as for read(); text is gzipped when path ends in
    .gz. The file is written to a temporary name and renamed into place.
    Raises ValueError for bad cells (as augment) or a bad path.
    """
    i32, f64 = _native.cells(idx, val)
    nnz, order = i32.shape
    _native.check(_native.lib.dainx_write(os.fsencode(path), i32.ctypes.data if nnz else None,
                                          f64.ctypes.data if nnz else None, nnz, order,
                                          _native.options_json({"format": format, "index_base": index_base})))


def predict(model, idx, backend=None, batch=None):
    """Predict cells with a model saved by ``dainx augment -model-out DIR``
    (``dainx predict``): model is DIR (its retrained model Θ′) or a
    NAME.json / NAME.safetensors path; idx an (n, order) integer array of
    0-based indices. backend: "cpu" (default), "cuda" or "auto"; batch:
    cells per forward pass (default the model's own).

    Returns (predictions, report): (n,) float64 and a dict (model, kind,
    role, trained_by, version, order, dims, …); no cells ((0, order) or
    (0, 0)) only loads and checks the model. batch is at most 16777216.
    The model's files are untrusted: their sizes are checked against
    limits, each other and the files' sizes before anything is allocated.
    Raises ValueError for a missing or malformed model (naming the file
    and the field), an order other than the model's, or an index outside
    the model's modes (naming the cell).
    """
    i32, _ = _native.cells(idx, None)
    n, order = i32.shape
    ptr = _native.ctypes.c_void_p()
    _native.check(_native.lib.dainx_predict(os.fsencode(model), i32.ctypes.data if n else None, n, order,
                                            _native.options_json({"backend": backend, "batch": batch}),
                                            _native.ctypes.byref(ptr)))
    _, pred, report, _ = _native.arrays(ptr)
    return pred, json.loads(report)


def fold_in(model, idx, val, model_out, progress=None, **options):
    """Add new entities to a saved model (``dainx fold-in -model model
    -model-out model_out``) and return the report (a dict).

    model: a directory saved by ``dainx augment -model-out`` (or a
        NAME.json / NAME.safetensors of one), by DAIN.save or by fold_in.
    idx, val: the cells, (nnz, order) 0-based indices as the model's and
        (nnz,) values. An index at or above a mode's size is a new entity
        (the mode grows to the largest; at most one new entity per cell).
    model_out: the directory written: the grown model (not model itself).
    progress: as for augment (epochs come with stage "fold-in").
    options: the flags of ``dainx fold-in`` without the dash, ``_`` for
        ``-``: tune="new" (the new entities' rows only; every known row
        and every layer stays bit for bit) or "all" (the known rows the
        cells touch train too), epochs, batch, lr, patience, l2, val_frac,
        seed, backend, quiet, report.

    The report gives dims_before, dims, new_entities (per mode), n_train,
    n_val, epochs, best_epoch, val_rmse, train_rmse, history, …. Raises
    ValueError for a bad model, cells of another order, an index that
    would add more new entities than cells, no new entity (tune="new") or
    a bad option; RuntimeError when the run fails; KeyboardInterrupt on
    Ctrl-C (nothing written).
    """
    i32, f64 = _native.cells(idx, val)
    opts = dict(options, model_out=os.fspath(model_out))
    ptr = _native.run_fold_in(os.fspath(model), i32, f64, _native.options_json(opts),
                              _reporter(progress, bool(options.get("quiet"))))
    _, _, report, _ = _native.arrays(ptr)
    return json.loads(report)


from ._estimator import DAIN, CellScores, load  # noqa: E402  (they use the functions above)
