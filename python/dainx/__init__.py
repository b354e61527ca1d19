"""dainx: DAIN, influence-guided data augmentation for neural tensor
completion (Oh, Kim, Rossi, Kumar, CIKM 2021), over libdainx.

    import dainx
    idx, val = dainx.read("ratings.tsv")            # (nnz, order) int32, (nnz,) float64
    aug_idx, aug_val, report = dainx.augment(idx, val, ratio=0.5, seed=7,
                                             layers="48,16", epochs=3)
    print(report["rmse_before"], report["rmse_after"])
    dainx.write("new.tsv", aug_idx, aug_val)

augment() is ``dainx augment`` on cells held in memory: its keyword
arguments are the command's flags (``test_frac`` for ``-test-frac``), and
it gives the same cells, values and report as the command for the same
cells, seed and flags.

Errors: ValueError for bad input or a bad option (the message names the
cell or the option), RuntimeError when the run fails (a CUDA error, too
few new cells reachable). The library is thread-safe; augment() releases
the GIL while it runs, so several threads can run it at once.
"""

import ctypes
import ctypes.util
import json
import os

import numpy as np

__all__ = ["augment", "read", "write", "version", "library_path", "__version__"]

_EINPUT, _ERUN = 1, 2
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _find_library():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libdainx.so")
    for cand in (os.environ.get("DAINX_LIBRARY"), here, ctypes.util.find_library("dainx")):
        if cand and (os.path.exists(cand) or not os.path.isabs(cand)):
            return cand
    raise ImportError("dainx: libdainx.so not found (next to the package, $DAINX_LIBRARY or the linker path); run `make python`")


library_path = _find_library()
_lib = ctypes.CDLL(library_path)

_p = ctypes.c_void_p
_lib.dainx_version.restype = ctypes.c_char_p
_lib.dainx_version.argtypes = []
_lib.dainx_last_error.restype = ctypes.c_char_p
_lib.dainx_last_error.argtypes = []
_lib.dainx_augment.restype = ctypes.c_int
_lib.dainx_augment.argtypes = [_p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER(_p)]
_lib.dainx_read.restype = ctypes.c_int
_lib.dainx_read.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_p)]
_lib.dainx_write.restype = ctypes.c_int
_lib.dainx_write.argtypes = [ctypes.c_char_p, _p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p]
_lib.dainx_result_count.restype = ctypes.c_int64
_lib.dainx_result_count.argtypes = [_p]
_lib.dainx_result_order.restype = ctypes.c_int32
_lib.dainx_result_order.argtypes = [_p]
_lib.dainx_result_indices.restype = _p
_lib.dainx_result_indices.argtypes = [_p]
_lib.dainx_result_values.restype = _p
_lib.dainx_result_values.argtypes = [_p]
_lib.dainx_result_report.restype = ctypes.c_char_p
_lib.dainx_result_report.argtypes = [_p]
_lib.dainx_result_free.restype = None
_lib.dainx_result_free.argtypes = [_p]


def version():
    """The library's version: the release number and the commit it was
    built from (e.g. ``0.6.0+a97d1d9a299c``), as ``dainx version`` prints it."""
    return _lib.dainx_version().decode()


__version__ = version()


def _check(rc):
    if rc == 0:
        return
    msg = _lib.dainx_last_error().decode("utf-8", "replace")
    if rc == _EINPUT:
        raise ValueError(msg)
    raise RuntimeError(msg)


class _Result:
    """Owns one dainx_result; freed when the last array over it is gone."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            _lib.dainx_result_free(self.ptr)
            self.ptr = None


class _View:
    """An array interface over memory that a _Result owns (no copy)."""

    def __init__(self, owner, addr, shape, typestr):
        self._owner = owner  # keeps the result alive as long as the array
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (addr, False), "version": 3}


def _arrays(ptr):
    """(idx, val, report) over a dainx_result, without copying the cells."""
    owner = _Result(ptr)
    n, order = _lib.dainx_result_count(ptr), _lib.dainx_result_order(ptr)
    report = _lib.dainx_result_report(ptr).decode()
    if n == 0:
        return np.empty((0, order), np.int32), np.empty(0, np.float64), report
    idx = np.asarray(_View(owner, _lib.dainx_result_indices(ptr), (n, order), "<i4"))
    val = np.asarray(_View(owner, _lib.dainx_result_values(ptr), (n,), "<f8"))
    return idx, val, report


def _cells(idx, val):
    """idx as a C-contiguous (nnz, order) int32 array and val as (nnz,)
    float64, converted only where needed; ValueError for anything else."""
    idx = np.asarray(idx)
    val = np.asarray(val)
    if idx.ndim != 2:
        raise ValueError("idx: want a 2-D (nnz, order) array of indices, got shape %s" % (idx.shape,))
    if idx.dtype.kind not in "iu":
        raise ValueError("idx: want an integer array, got dtype %s" % idx.dtype)
    if val.ndim != 1 or val.shape[0] != idx.shape[0]:
        raise ValueError("val: want shape (%d,) to match idx %s, got %s" % (idx.shape[0], idx.shape, val.shape))
    if val.dtype.kind not in "iuf":
        raise ValueError("val: want a numeric array, got dtype %s" % val.dtype)
    if idx.dtype != np.int32 and idx.size:
        bad = (idx < _INT32_MIN) | (idx > _INT32_MAX)
        if bad.any():
            k, m = np.argwhere(bad)[0]
            raise ValueError("cell %d (%s): index %d in mode %d is outside int32"
                             % (k, ", ".join(str(int(x)) for x in idx[k]), int(idx[k, m]), m + 1))
    return np.ascontiguousarray(idx, dtype=np.int32), np.ascontiguousarray(val, dtype=np.float64)


def _options(kw):
    out = {}
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(str(int(x)) for x in v)
        elif isinstance(v, np.generic):
            v = v.item()
        out[k.replace("_", "-")] = v
    return json.dumps(out).encode() if out else None


def augment(idx, val, **options):
    """Run DAIN (``dainx augment``) on the cells idx, val.

    idx: (nnz, order) integer array of 0-based indices (any integer dtype;
        int32 C-contiguous arrays are passed without a copy). The mode sizes
        are the largest index of each mode + 1.
    val: (nnz,) float array of values.
    options: the flags of ``dainx augment`` without the dash, ``_`` for
        ``-`` (ratio=0.5, seed=7, layers="48,16" or [48, 16], epochs=3,
        backend="cpu", quiet=True, test_frac=0.1, method="random", …);
        None leaves a flag at its default. "input" is refused (the cells
        are the input); "output" and "report" also write files.

    Returns (aug_idx, aug_val, report): aug_idx (n_aug, order) int32 and
    aug_val (n_aug,) float64, the new cells and their predicted values
    (arrays over the library's memory, no copy), and the report as a dict
    (rmse_before, rmse_after, n_aug, seconds, history_before, …).

    Raises ValueError for bad cells (negative index, index outside int32,
    NaN or infinite value, duplicate cell, nnz or order 0) or a bad option
    (unknown key, bad value), naming the cell or option; RuntimeError when
    the run fails.
    """
    i32, f64 = _cells(idx, val)
    nnz, order = i32.shape
    ptr = _p()
    rc = _lib.dainx_augment(i32.ctypes.data if nnz else None, f64.ctypes.data if nnz else None,
                            nnz, order, _options(options), ctypes.byref(ptr))
    _check(rc)
    aug_idx, aug_val, report = _arrays(ptr)
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
    ptr = _p()
    _check(_lib.dainx_read(os.fsencode(path), _options({"format": format, "index_base": index_base}),
                           ctypes.byref(ptr)))
    idx, val, _ = _arrays(ptr)
    return idx, val


def write(path, idx, val, format=None, index_base=None):
    """Write cells as ``dainx augment -output`` does.

    idx: (nnz, order) integer array of 0-based indices; val: (nnz,) floats.
    format, index_base: as for read(); text is gzipped when path ends in
    .gz. The file is written to a temporary name and renamed into place.
    Raises ValueError for bad cells (as augment) or a bad path.
    """
    i32, f64 = _cells(idx, val)
    nnz, order = i32.shape
    _check(_lib.dainx_write(os.fsencode(path), i32.ctypes.data if nnz else None, f64.ctypes.data if nnz else None,
                            nnz, order, _options({"format": format, "index_base": index_base})))
