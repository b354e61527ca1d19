"""The ctypes side of dainx: loading libdainx, its prototypes, results and
the runner that gives progress events, Ctrl-C and a clean stop."""

import collections
import ctypes
import ctypes.util
import json
import os
import queue
import re
import threading

import numpy as np

EINPUT, ERUN, ECANCELLED = 1, 2, 3
_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _find_library():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libdainx.so")
    for cand in (os.environ.get("DAINX_LIBRARY"), here, ctypes.util.find_library("dainx")):
        if cand and (os.path.exists(cand) or not os.path.isabs(cand)):
            return cand
    raise ImportError("dainx: libdainx.so not found (next to the package, $DAINX_LIBRARY or the linker path); "
                      "build it with `make python` (or `pip install ./python` with Go installed)")


library_path = _find_library()
lib = ctypes.CDLL(library_path)

_p = ctypes.c_void_p
PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_proto("dainx_version", ctypes.c_char_p)
_proto("dainx_last_error", ctypes.c_char_p)
_proto("dainx_augment_progress", ctypes.c_int, _p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p, PROGRESS, _p,
       ctypes.POINTER(_p))
_proto("dainx_read", ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_p))
_proto("dainx_write", ctypes.c_int, ctypes.c_char_p, _p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p)
_proto("dainx_predict", ctypes.c_int, ctypes.c_char_p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p,
       ctypes.POINTER(_p))
_proto("dainx_fold_in", ctypes.c_int, ctypes.c_char_p, _p, _p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p,
       PROGRESS, _p, ctypes.POINTER(_p))
_proto("dainx_result_count", ctypes.c_int64, _p)
_proto("dainx_result_order", ctypes.c_int32, _p)
_proto("dainx_result_indices", _p, _p)
_proto("dainx_result_values", _p, _p)
_proto("dainx_result_report", ctypes.c_char_p, _p)
_proto("dainx_result_score_count", ctypes.c_int64, _p)
_proto("dainx_result_score_indices", _p, _p)
_proto("dainx_result_score_values", _p, _p)
_proto("dainx_result_alpha", _p, _p)
_proto("dainx_result_scores", _p, _p)
_proto("dainx_result_importance", ctypes.c_int64, _p, ctypes.c_int32, ctypes.POINTER(_p))
_proto("dainx_result_free", None, _p)


def version():
    """The library's version: the release number and the commit it was
    built from (e.g. ``0.7.0+a97d1d9a299c``), as ``dainx version`` prints it."""
    return lib.dainx_version().decode()


# A command-line flag in a message ("-layers", "-test-frac"), at the start
# or after a space, bracket or quote, with the space before its value
# (a number or a quoted string), and the library's 'option "name"'.
_FLAG = re.compile(r"""(?:(?<=^)|(?<=[\s(\[`'"]))-(?!inf\b|nan\b)([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?![\w-])( (?=[-+.0-9"']))?""")
_OPTION = re.compile(r'option "([a-z][a-z0-9]*(?:-[a-z0-9]+)*)"')


def pythonic(msg):
    """A library message with the Python option names: ``-test-frac 2``
    becomes ``test_frac=2``, ``-ratio must`` ``ratio= must`` and
    ``option "test-frac"`` ``test_frac=``."""
    msg = _OPTION.sub(lambda m: m.group(1).replace("-", "_") + "=", msg)
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_") + "=", msg)


def check(rc):
    """Raise the exception of a non-zero return code: ValueError for bad
    input (DAINX_EINPUT), RuntimeError otherwise; the message with the
    Python option names (pythonic)."""
    if rc == 0:
        return
    msg = pythonic(lib.dainx_last_error().decode("utf-8", "replace"))
    if rc == EINPUT:
        raise ValueError(msg)
    raise RuntimeError(msg)


class Result:
    """Owns one dainx_result; freed when the last array over it is gone."""

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            lib.dainx_result_free(self.ptr)
            self.ptr = None


class _View:
    """An array interface over memory that a Result owns (no copy)."""

    def __init__(self, owner, addr, shape, typestr):
        self._owner = owner  # keeps the result alive as long as the array
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (addr, False), "version": 3}


def _array(owner, addr, shape, typestr, dtype):
    if not addr or 0 in shape:
        return np.empty(shape, dtype)
    return np.asarray(_View(owner, addr, shape, typestr))


def arrays(ptr):
    """(idx, val, report, owner) over a dainx_result, without copying."""
    owner = Result(ptr)
    n, order = lib.dainx_result_count(ptr), lib.dainx_result_order(ptr)
    report = lib.dainx_result_report(ptr).decode()
    idx = _array(owner, lib.dainx_result_indices(ptr), (n, order), "<i4", np.int32)
    val = _array(owner, lib.dainx_result_values(ptr), (n,), "<f8", np.float64)
    return idx, val, report, owner


def influence(owner):
    """The cell scores (idx, val, alpha, score) and the per-mode entity
    importances of an augment result; None for what it lacks."""
    ptr = owner.ptr
    order = lib.dainx_result_order(ptr)
    scores = None
    n = lib.dainx_result_score_count(ptr)
    if n > 0:
        scores = (_array(owner, lib.dainx_result_score_indices(ptr), (n, order), "<i4", np.int32),
                  _array(owner, lib.dainx_result_score_values(ptr), (n,), "<f8", np.float64),
                  _array(owner, lib.dainx_result_alpha(ptr), (n,), "<f4", np.float32),
                  _array(owner, lib.dainx_result_scores(ptr), (n,), "<f4", np.float32))
    imp = []
    for m in range(order):
        addr = _p()
        k = lib.dainx_result_importance(ptr, m, ctypes.byref(addr))
        if k <= 0:
            return scores, None
        imp.append(_array(owner, addr.value, (k,), "<f8", np.float64))
    return scores, (imp or None)


def cells(idx, val, what="idx"):
    """idx as a C-contiguous (nnz, order) int32 array and val (when not
    None) as (nnz,) float64, converted only where needed; ValueError for
    anything else."""
    idx = np.asarray(idx)
    if idx.ndim != 2:
        raise ValueError("%s: want a 2-D (nnz, order) array of indices, got shape %s" % (what, idx.shape))
    if idx.dtype.kind not in "iu":
        raise ValueError("%s: want an integer array, got dtype %s" % (what, idx.dtype))
    if val is not None:
        val = np.asarray(val)
        if val.ndim != 1 or val.shape[0] != idx.shape[0]:
            raise ValueError("val: want shape (%d,) to match idx %s, got %s" % (idx.shape[0], idx.shape, val.shape))
        if val.dtype.kind not in "iuf":
            raise ValueError("val: want a numeric array, got dtype %s" % val.dtype)
        val = np.ascontiguousarray(val, dtype=np.float64)
    if idx.dtype != np.int32 and idx.size:
        bad = (idx < _INT32_MIN) | (idx > _INT32_MAX)
        if bad.any():
            k, m = np.argwhere(bad)[0]
            raise ValueError("cell %d (%s): index %d in mode %d is outside int32"
                             % (k, ", ".join(str(int(x)) for x in idx[k]), int(idx[k, m]), m + 1))
    return np.ascontiguousarray(idx, dtype=np.int32), val


def options_json(kw):
    """The JSON options of the C API from Python keyword arguments: "_"
    becomes "-", None is left out, lists become comma lists."""
    out = {}
    for k, v in kw.items():
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(str(int(x)) for x in v)
        elif isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, os.PathLike):
            v = os.fspath(v)
        out[k.replace("_", "-")] = v
    return json.dumps(out).encode() if out else None


Epoch = collections.namedtuple("Epoch", "stage model epoch epochs train_mse val_mse best seconds elapsed")
Epoch.__doc__ = """One finished training epoch, as a ``progress`` callable receives it.

stage: "train" (Θ, the model TracIn reads), "predict" (the CoSTCo value
predictor) or "retrain" (Θ′ on the augmented tensor); model: "Θ", "Θc" or
"Θ'"; epoch: 1-based; epochs: the epochs asked for; train_mse, val_mse:
the epoch's mean training MSE and its validation MSE (None if not
finite); best: the lowest validation MSE so far; seconds: the epoch's
wall time; elapsed: seconds since the run began."""


def epoch_of(ev):
    return Epoch(ev.get("stage"), ev.get("model"), ev.get("epoch"), ev.get("epochs"), ev.get("train_mse"),
                 ev.get("val_mse"), bool(ev.get("best")), ev.get("seconds"), ev.get("elapsed"))


def run_augment(i32, f64, options, on_event):
    """dainx_augment_progress on i32, f64 with the JSON options, in a
    worker thread while this thread hands each event (a dict) to
    on_event. KeyboardInterrupt (Ctrl-C) or an exception from on_event
    stops the run at its next step (the library checks about every 250 ms)
    and is raised here once the worker has ended: no thread is left
    behind. Returns the result pointer; raises ValueError/RuntimeError for
    the library's errors."""
    nnz, order = i32.shape
    return _run_events(lambda cb, out: lib.dainx_augment_progress(i32.ctypes.data if nnz else None,
                                                                  f64.ctypes.data if nnz else None,
                                                                  nnz, order, options, cb, None, out), on_event)


def run_fold_in(model, i32, f64, options, on_event):
    """dainx_fold_in of the model directory on i32, f64 with the JSON
    options, as run_augment runs dainx_augment_progress (events, Ctrl-C,
    errors). Returns the result pointer (its report)."""
    nnz, order = i32.shape
    return _run_events(lambda cb, out: lib.dainx_fold_in(os.fsencode(model), i32.ctypes.data if nnz else None,
                                                         f64.ctypes.data if nnz else None, nnz, order, options, cb,
                                                         None, out), on_event)


def _run_events(call, on_event):
    """call(callback, out) (a dainx_*_progress-style function) in a worker
    thread; see run_augment."""
    events = queue.Queue()
    stop = threading.Event()

    def callback(ev, _user):
        if stop.is_set():
            return 1
        events.put(ev)
        return 0

    cb = PROGRESS(callback)
    ptr = _p()
    rc = []

    def work():
        try:
            code = call(cb, ctypes.byref(ptr))
            # The message is the calling thread's: read it here.
            msg = lib.dainx_last_error().decode("utf-8", "replace") if code else ""
            rc.append((code, msg))
        except BaseException as e:  # never expected; keep it for the caller
            rc.append(e)
        finally:
            events.put(None)

    worker = threading.Thread(target=work, name="dainx", daemon=True)
    pending = None
    try:
        worker.start()
        while True:
            ev = _get(events)
            if ev is None:
                if rc:  # the worker has returned (its sentinel, or a timeout after it)
                    break
                continue
            on_event(json.loads(ev))
    except BaseException as e:  # KeyboardInterrupt, or on_event's exception
        pending = e
        stop.set()
    # The run stops at its next tick; wait for it, even through another
    # Ctrl-C, so that nothing is left running.
    while worker.is_alive():
        try:
            worker.join(0.1)
        except KeyboardInterrupt:
            stop.set()
            pending = pending or KeyboardInterrupt()
    result = rc[0] if rc else RuntimeError("dainx: the run ended without a result")
    if pending is not None:
        if result == (0, ""):
            lib.dainx_result_free(ptr)
        raise pending
    if isinstance(result, BaseException):
        raise result
    code, msg = result
    msg = pythonic(msg)
    if code == ECANCELLED:
        raise KeyboardInterrupt("dainx: cancelled")
    if code == EINPUT:
        raise ValueError(msg)
    if code != 0:
        raise RuntimeError(msg)
    return ptr


def _get(q):
    """The next event, or None every 100 ms so the caller can look around
    (Queue.get with a timeout is interruptible by Ctrl-C)."""
    try:
        return q.get(timeout=0.1)
    except queue.Empty:
        return None
