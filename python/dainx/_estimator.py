"""dainx.DAIN, a scikit-learn-style estimator over libdainx, and
dainx.load."""

import collections
import json
import os
import re
import shutil
import tempfile

import numpy as np

from . import _native, _savedir

# Files of a model directory: model.json and model.safetensors as
# `dainx augment -model-out DIR` writes them (docs/model-format.md), and,
# from Python, python.json with the entity IDs and the estimator's options.
_MODEL_FILES = ("model.json", "model.safetensors")
# An ensemble's model.json names members saved beside it as
# model.KIND.json and model.KIND.safetensors (docs/model-format.md), and
# it has no model.safetensors of its own.
_MEMBER_FILE = re.compile(r"^model\.[a-z][a-z-]*\.(json|safetensors)$")


def _is_model_file(name):
    """Whether name is one of a saved model's files (a member's too)."""
    return name in _MODEL_FILES or _MEMBER_FILE.match(name) is not None


def _read_model_files(d):
    """The bytes of every model file in the directory d, by name."""
    files = {}
    for name in sorted(os.listdir(d)):
        if _is_model_file(name):
            with open(os.path.join(d, name), "rb") as f:
                files[name] = f.read()
    return files
_PYTHON_FILE = "python.json"
_PYTHON_FORMAT = "dainx-python"
# dictionaries.json: each mode's index -> ID (a time mode's bins), as
# `dainx augment -index ... -model-out DIR` writes it and `dainx predict
# -index` reads it (docs/usage.md, "Your own data"); save writes it too.
_DICT_FILE = "dictionaries.json"
_DICT_FORMAT = "dainx-dictionaries"
_BINS = {"hour": 3600, "day": 86400, "week": 7 * 86400, "month": 0}

CellScores = collections.namedtuple("CellScores", "idx value alpha score")
CellScores.__doc__ = """The cell scores of a DAIN fitted on arrays: one row per
training cell (the training set's order): idx (n, order) int32, value (n,)
float64, alpha (n,) float32 (α_z, the importance the entity aggregation
used) and score (n,) float32 (the signed TracIn sum S_z, Oh et al. eq. 5
without |·|)."""


def _is_frame(x):
    """x is a pandas DataFrame (pandas is imported only if x could be one)."""
    return type(x).__module__.startswith("pandas") and hasattr(x, "columns")


def _pandas():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - pandas is there for DataFrame input
        raise ImportError("dainx: this needs pandas") from e
    return pandas


class DAIN:
    """DAIN, influence-guided data augmentation for neural tensor completion
    (Oh, Kim, Rossi, Kumar, CIKM 2021), as an estimator.

    DAIN(**options): the options of dainx.augment(), i.e. the flags of
    ``dainx augment`` (ratio=0.5, seed=7, layers="48,16", epochs=20,
    backend="cpu", test_frac=0.1, method="dain", checkpoint="dir",
    resume=True, …), plus progress= (None: progress lines go to the "dainx"
    logger; a callable: it gets a dainx.Epoch after every training epoch;
    "stderr": the lines go to standard error). Nothing is checked until
    fit (get_params/set_params/sklearn.base.clone work as for any
    estimator).

    fit(idx, val) on an (nnz, order) integer array of 0-based indices and
    (nnz,) values, or fit(df, index=[columns], value=column) on a pandas
    DataFrame whose index columns hold IDs of any hashable type. After fit:

    augmented_: the new cells with their predicted values (what
        ``-output`` writes): a DataFrame with the input's index and value
        columns and IDs, or an (idx, val) pair for array input.
    cell_scores_: one row per training cell: its IDs (or indices), value,
        alpha (α_z) and score (S_z); a DataFrame, or a CellScores for array
        input; None for a method that scores no cell (random, …).
    entity_importance_: {column: Series indexed by ID} (or {mode: ndarray}
        for array input), each mode's importances, summing to 1 (the
        distribution new cells are drawn from); None if the method has
        none.
    report_: the run's report (a dict, as ``dainx augment`` prints it).
    index_, value_: the index columns and the value column (None for
        array input); entities_: the IDs of each mode, in index order.

    predict(X) predicts cells given as fit takes them (with the retrained
    model Θ′); save(path) writes the model as ``-model-out`` does (plus
    the IDs), dainx.load(path) reads it back, also one saved by the
    command line.

    partial_fit(X, y) folds new entities into the fitted model (``dainx
    fold-in``): IDs (or indices) the model does not know get embedding
    rows trained on X's cells, everything else frozen; predict then
    answers for them. fold_in_report_ is its report.
    """

    def __init__(self, **options):
        self._params = dict(options)

    # scikit-learn's estimator protocol: the constructor's keywords are
    # the parameters, stored as given.
    def get_params(self, deep=True):
        """The options this estimator was made with (a new dict)."""
        return dict(self._params)

    def set_params(self, **params):
        """Set options (as in the constructor); returns self."""
        self._params.update(params)
        return self

    def __repr__(self):
        return "DAIN(%s)" % ", ".join("%s=%r" % kv for kv in sorted(self._params.items()))

    def __getstate__(self):
        return self.__dict__

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, *, index=None, value=None):
        """Train, score and augment; see the class. Returns self.

        X, y: an (nnz, order) integer index array and (nnz,) values; or X a
        DataFrame, index its ID columns (default: every column but value)
        and value its value column (required).

        Raises ValueError for bad cells or options (naming them),
        RuntimeError when the run fails, KeyboardInterrupt on Ctrl-C (the
        run stops within a fraction of a second, nothing is left behind;
        with checkpoint=, resume=True goes on from the last epoch).
        """
        idx, val, ids = self._encode_fit(X, y, index, value)
        opts = dict(self._params)
        progress = opts.pop("progress", None)
        if "input" in opts:
            raise ValueError('option "input": the cells are passed to fit')
        user_dir = opts.get("model_out")
        tmp = None
        try:
            if user_dir is None:
                tmp = tempfile.mkdtemp(prefix="dainx-fit-")
                opts["model_out"] = os.path.join(tmp, "model")
            from . import _augment
            ptr = _augment(idx, val, opts, progress)
            aug_idx, aug_val, report, owner = _native.arrays(ptr)
            scores, imp = _native.influence(owner)
            files = _read_model_files(os.fspath(opts["model_out"]))
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        self._model_files = files
        self._time_bins, self._dict_file = {}, None
        self.index_, self.value_, self.entities_ = ids
        self.report_ = json.loads(report)
        self.augmented_ = self._decode_cells(aug_idx.copy(), aug_val.copy())
        self.cell_scores_ = self._decode_scores(scores)
        self.entity_importance_ = self._decode_importance(imp)
        return self

    def _encode_fit(self, X, y, index, value):
        """(idx, val, (index_, value_, entities_)) of fit's input."""
        if _is_frame(X):
            pd = _pandas()
            if y is not None:
                raise ValueError("fit(df, ...): the values are a column of df (value=...), not y")
            if value is None:
                raise ValueError("fit(df, ...): name the value column, value=...")
            if value not in X.columns:
                raise ValueError("value=%r: no such column (columns: %s)" % (value, list(X.columns)))
            if index is None:
                index = [c for c in X.columns if c != value]
            index = list(index)
            if not index:
                raise ValueError("fit(df, ...): no index column")
            for c in index:
                if c not in X.columns:
                    raise ValueError("index column %r: no such column (columns: %s)" % (c, list(X.columns)))
            if value in index:
                raise ValueError("column %r is both an index column and the value" % (value,))
            cols, entities = [], []
            for c in index:
                codes, uniques = pd.factorize(X[c], sort=False)
                if (codes < 0).any():
                    row = X.index[int(np.argmax(codes < 0))]
                    raise ValueError("index column %r: missing ID in row %r" % (c, row))
                cols.append(codes.astype(np.int32))
                entities.append(pd.Index(uniques, name=c))
            idx = np.stack(cols, axis=1) if cols else np.empty((0, 0), np.int32)
            _check_duplicates(X, idx, index)
            vals = pd.to_numeric(X[value], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
            bad = ~np.isfinite(vals)
            if bad.any():
                k = int(np.argmax(bad))
                raise ValueError("value column %r: row %r holds %r, not a finite number"
                                 % (value, X.index[k], X[value].iloc[k]))
            return idx, vals, (index, value, entities)
        if index is not None or value is not None:
            raise ValueError("index= and value= name DataFrame columns; for arrays call fit(idx, val)")
        if y is None:
            raise ValueError("fit(idx, val): the values are missing")
        idx, val = _native.cells(X, y)
        return idx, val, (None, None, None)

    # ------------------------------------------------------------- decoding
    def _frame(self, idx, extra):
        pd = _pandas()
        data = {}
        for m, c in enumerate(self.index_):
            data[c] = self.entities_[m].take(idx[:, m]) if len(idx) else self.entities_[m][:0]
        data.update(extra)
        return pd.DataFrame(data)

    def _decode_cells(self, idx, val):
        if self.index_ is None:
            return idx, val
        return self._frame(idx, {self.value_: val})

    def _decode_scores(self, scores):
        if scores is None:
            return None
        idx, value, alpha, score = (np.array(a) for a in scores)
        if self.index_ is None:
            return CellScores(idx, value, alpha, score)
        return self._frame(idx, {self.value_: value, "alpha": alpha, "score": score})

    def _decode_importance(self, imp):
        if imp is None:
            return None
        if self.index_ is None:
            return {m: np.array(a) for m, a in enumerate(imp)}
        pd = _pandas()
        return {c: pd.Series(np.array(imp[m]), index=self.entities_[m], name="importance")
                for m, c in enumerate(self.index_)}

    # ---------------------------------------------------------- partial_fit
    def partial_fit(self, X, y=None, *, index=None, value=None, tune="new", progress=None, **options):
        """Fold the new entities of the cells X into the fitted model, as
        ``dainx fold-in`` does, and return self.

        X, y: as fit takes them: a DataFrame with the index columns (IDs
        of any hashable type) and the value column, or an (nnz, order)
        integer index array and (nnz,) values. IDs the model does not know
        are new entities, numbered after the known ones in order of first
        appearance (entities_ grows; save writes them); with arrays an
        index at or above a mode's size is a new entity (at most one new
        entity per cell). The new entities' embedding rows are initialised
        as the model's kind initialises its table and trained on X's cells
        with every known row and every layer frozen, bit for bit
        (tune="new"); tune="all" also trains the known rows the cells
        touch (the layers stay frozen). Early stopping uses a validation
        share of the cells (val_frac, default 0.1).

        options: the flags of ``dainx fold-in`` without the dash: epochs,
        batch, lr, patience, l2, val_frac, seed, backend, quiet (the
        estimator's seed, backend, device, precision and quiet are used
        unless given); fold-in's own defaults otherwise (50 epochs,
        batch 256, lr 0.01, patience 10). progress: as the estimator's
        (epochs come with stage "fold-in"). fold_in_report_ is the report
        (new_entities per mode, n_train, n_val, epochs, val_rmse, …).

        Raises ValueError for bad cells (a missing ID, a duplicate cell,
        a value that is not a number, cells of another order, an index
        that would add more new entities than cells, no new entity with
        tune="new") or options; RuntimeError when the run fails;
        KeyboardInterrupt on Ctrl-C (the model is then unchanged).
        """
        self._fitted()
        for key in ("model", "model_out", "input"):
            if key in options:
                raise ValueError('option "%s": partial_fit folds into this estimator\'s model' % key)
        idx, val, grown = self._encode_new(X, y, index, value)
        opts = {k: self._params[k] for k in ("seed", "backend", "device", "precision", "quiet")
                if self._params.get(k) is not None}
        opts.update(options)
        opts["tune"] = tune
        if progress is None:
            progress = self._params.get("progress")
        tmp = tempfile.mkdtemp(prefix="dainx-partial-fit-")
        try:
            src, dst = os.path.join(tmp, "model"), os.path.join(tmp, "out")
            os.mkdir(src)
            for name, b in self._model_files.items():
                with open(os.path.join(src, name), "wb") as f:
                    f.write(b)
            from . import fold_in
            report = fold_in(src, idx, val, dst, progress=progress, **opts)
            files = _read_model_files(dst)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self._model_files = files
        if grown is not None:
            self.entities_ = grown
            dict_file = getattr(self, "_dict_file", None)
            if dict_file is not None:
                self._dict_file = _grow_dictionaries(dict_file, grown)
        self.fold_in_report_ = report
        return self

    def _encode_new(self, X, y, index, value):
        """(idx, val, grown entities_ or None) of partial_fit's cells."""
        if not _is_frame(X):
            if index is not None or value is not None:
                raise ValueError("index= and value= name DataFrame columns; for arrays call partial_fit(idx, val)")
            if self.index_ is not None:
                raise ValueError("partial_fit: this model was fitted on a DataFrame; give a DataFrame with columns %s"
                                 % (self.index_ + [self.value_],))
            if y is None:
                raise ValueError("partial_fit(idx, val): the values are missing")
            idx, val = _native.cells(X, y)
            return idx, val, None
        pd = _pandas()
        if y is not None:
            raise ValueError("partial_fit(df, ...): the values are a column of df (value=...), not y")
        if self.index_ is None:
            raise ValueError("partial_fit: this model was fitted on index arrays; give (idx, val)")
        value = self.value_ if value is None else value
        cols = list(index) if index is not None else list(self.index_)
        if len(cols) != len(self.index_):
            raise ValueError("partial_fit: want %d index columns (%s), got %s" % (len(self.index_), self.index_, cols))
        for c in cols + [value]:
            if c not in X.columns:
                raise ValueError("partial_fit: column %r is not in X (columns: %s)" % (c, list(X.columns)))
        out = np.empty((len(X), len(cols)), np.int32)
        bins = getattr(self, "_time_bins", None) or {}
        grown = []
        for m, c in enumerate(cols):
            ent = self.entities_[m]
            if m in bins:  # a time mode of a command-line model: its bins
                try:
                    out[:, m] = _time_index(X[c], c, *bins[m])
                except ValueError as e:
                    raise ValueError("partial_fit" + str(e)[len("predict"):] if str(e).startswith("predict:")
                                     else str(e)) from None
                grown.append(ent)
                continue
            if X[c].isna().any():
                raise ValueError("index column %r: missing ID in row %r" % (c, X.index[int(np.argmax(X[c].isna()))]))
            pos = ent.get_indexer(X[c])
            new = pd.unique(X[c][pos < 0])  # in order of first appearance
            if len(new):
                ent = ent.append(pd.Index(new, name=ent.name))
                pos = ent.get_indexer(X[c])
            out[:, m] = pos
            grown.append(ent)
        _check_duplicates(X, out, cols)
        vals = pd.to_numeric(X[value], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(vals)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError("value column %r: row %r holds %r, not a finite number"
                             % (value, X.index[k], X[value].iloc[k]))
        return out, vals, grown

    # -------------------------------------------------------------- predict
    def _fitted(self):
        if not hasattr(self, "_model_files"):
            raise ValueError("this DAIN is not fitted yet: call fit (or dainx.load) first")

    def _encode_query(self, X, index):
        """The (n, order) 0-based indices of query cells."""
        if _is_frame(X):
            if self.index_ is None:
                cols = list(index) if index is not None else list(X.columns)
                return _native.cells(X[cols].to_numpy(), None, "X")[0]
            cols = list(index) if index is not None else self.index_
            if len(cols) != len(self.index_):
                raise ValueError("predict: want %d index columns (%s), got %s" % (len(self.index_), self.index_, cols))
            out = np.empty((len(X), len(cols)), np.int32)
            bins = getattr(self, "_time_bins", None) or {}
            for m, c in enumerate(cols):
                if c not in X.columns:
                    raise ValueError("predict: index column %r is not in X (columns: %s)" % (c, list(X.columns)))
                if m in bins:
                    out[:, m] = _time_index(X[c], c, *bins[m])
                    continue
                pos = self.entities_[m].get_indexer(X[c])
                if (pos < 0).any():
                    unknown = list(dict.fromkeys(X[c][pos < 0]))
                    shown = ", ".join(repr(u) for u in unknown[:10])
                    more = " and %d more" % (len(unknown) - 10) if len(unknown) > 10 else ""
                    raise ValueError("predict: %d unknown ID%s in column %r: %s%s (the model knows only the IDs "
                                     "it was fitted on)" % (len(unknown), "s" if len(unknown) > 1 else "",
                                                            c, shown, more))
                out[:, m] = pos
            return out
        if self.index_ is not None:
            raise ValueError("predict: this model was fitted on a DataFrame; give a DataFrame with columns %s"
                             % (self.index_,))
        return _native.cells(X, None, "X")[0]

    def predict(self, X, *, index=None, backend=None):
        """Predicted values of the cells X, given as fit took them (a
        DataFrame with the index columns, or an (n, order) index array),
        with the retrained model Θ′. Returns an (n,) float64 array.
        Raises ValueError for an ID the model was not fitted on (naming
        them) or an index outside the model's modes."""
        self._fitted()
        idx = self._encode_query(X, index)
        if len(idx) == 0:
            return np.empty(0, np.float64)
        from . import predict
        tmp = tempfile.mkdtemp(prefix="dainx-predict-")
        try:
            for name, b in self._model_files.items():
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(b)
            pred, _ = predict(tmp, idx, backend=backend)
            return np.array(pred)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _dictionaries(self, entities):
        """The dictionaries.json object of a DataFrame fit (ids in index
        order: the JSON IDs of python.json)."""
        modes = []
        for c, ids in zip(self.index_, entities):
            modes.append({"column": c, "kind": _id_kind(ids), "size": len(ids), "ids": ids})
        return {"format": _DICT_FORMAT, "version": 1, "table": "", "value": self.value_, "ids": "first",
                "modes": modes}

    # ------------------------------------------------------------ save/load
    def save(self, path):
        """Write the fitted model to the directory path: model.json and
        model.safetensors as ``dainx augment -model-out`` writes them (so
        ``dainx predict -model path`` reads it), and python.json with the
        entity IDs, columns and options; for a DataFrame fit also
        dictionaries.json, the IDs as ``dainx augment -index -model-out``
        writes them, so that ``dainx predict -model path -input cells.csv
        -index user,item,...`` takes cells by ID.

        The save is one transaction: the files are written into a new
        directory beside path (same parent), which then replaces path (an
        older save is renamed aside, the new one renamed in, the old one
        removed). On any failure nothing of this save remains and an older
        save at path is intact; the OSError names path (never a temporary:
        those are .NAME.dainx-tmp-PID-..., and a killed save's are removed by
        the next save once their process is gone). IDs must be str, int, float or bool
        (TypeError otherwise). ValueError if path is an existing file or
        other non-directory, or a directory holding anything but a saved
        model's files (it is never emptied)."""
        self._fitted()
        side = {"format": _PYTHON_FORMAT, "version": 1, "index": self.index_, "value": self.value_,
                "entities": None, "options": _jsonable_options(self._params), "report": self.report_}
        dict_file = getattr(self, "_dict_file", None)
        if dict_file is not None:
            # Loaded from a command-line model's dictionaries: kept as they are.
            side["index"] = side["value"] = None
        elif self.entities_ is not None:
            side["entities"] = [[_json_id(v, c) for v in ent] for c, ent in zip(self.index_, self.entities_)]
            dict_file = (json.dumps(self._dictionaries(side["entities"]), ensure_ascii=False) + "\n").encode()
        files = dict(self._model_files)
        files[_PYTHON_FILE] = (json.dumps(side, ensure_ascii=False) + "\n").encode()
        if dict_file is not None:
            files[_DICT_FILE] = dict_file
        user_path = os.fspath(path)
        path = os.path.abspath(user_path)
        if os.path.lexists(path):
            if not os.path.isdir(path) or os.path.islink(path):
                raise ValueError("save: %s exists and is not a directory" % user_path)
            other = sorted(n for n in os.listdir(path) if not _is_model_file(n) and n not in (_PYTHON_FILE, _DICT_FILE))
            if other:
                raise ValueError("save: %s holds %s, not only a saved model's files; not replacing it"
                                 % (user_path, ", ".join(repr(o) for o in other[:5])))
        _savedir.save_dir(path, files, user_path)
        return self


def _id_kind(ids):
    """The kind of a dictionaries.json mode of the JSON IDs ids: "int",
    "string" or "mixed"."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
        return "int"
    if all(isinstance(v, str) for v in ids):
        return "string"
    return "mixed"


def _grow_dictionaries(dict_file, grown):
    """A dictionaries.json (bytes) with its modes of IDs grown to the
    entities grown (time modes are kept)."""
    d = json.loads(dict_file.decode("utf-8"))
    for m, mode in zip(d["modes"], grown):
        if m.get("kind") == "time":
            continue
        ids = [_json_id(v, m["column"]) for v in mode]
        m["kind"] = _id_kind(ids)
        m["ids"], m["size"] = ids, len(ids)
    return (json.dumps(d, ensure_ascii=False) + "\n").encode()


def _check_duplicates(X, idx, index):
    """ValueError naming the first repeated cell of a DataFrame by its IDs
    and rows (the library would name it by internal codes)."""
    if len(idx) < 2:
        return
    order = np.lexsort(idx.T[::-1])
    s = idx[order]
    same = np.all(s[1:] == s[:-1], axis=1)
    if not same.any():
        return
    rows = order[np.nonzero(same)[0][0]:][:2]
    first, second = sorted(int(r) for r in rows)
    cell = ", ".join("%s=%s" % (c, _short(X[c].iloc[second])) for c in index)
    raise ValueError("duplicate cell (%s): row %s repeats row %s (each cell may appear once)"
                     % (cell, _short(X.index[second]), _short(X.index[first])))


def _short(v, n=80):
    """repr(v), at most n characters (… marks a cut)."""
    r = repr(v.item() if isinstance(v, np.generic) else v)
    return r if len(r) <= n else r[:n] + "…"


def _json_id(v, column):
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError("save: ID %r of column %r is a %s; save supports str, int, float and bool IDs"
                    % (v, column, type(v).__name__))


def _jsonable_options(params):
    out = {}
    for k, v in params.items():
        if k == "progress":
            continue
        if isinstance(v, os.PathLike):
            v = os.fspath(v)
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


def load(path):
    """A fitted DAIN from a directory written by DAIN.save or by ``dainx
    augment -model-out path`` (then it predicts on index arrays or, when
    the run read a table with -index, on DataFrames of its ID columns,
    with a binned time column given as Unix seconds, datetimes or ISO
    8601 text; its report_, augmented_, cell_scores_ and
    entity_importance_ are None).

    The files are untrusted: the model is loaded and checked by the
    library (every size against limits, against each other and against
    the files' sizes), and python.json against the model (its format,
    the number of index columns and entity lists against the model's
    order, each list's length against the model's mode size, the types of
    every field). Raises ValueError naming the file and the field for a
    missing or malformed model or python.json."""
    path = os.fspath(path)
    p = os.path.join(path, _MODEL_FILES[0])
    if not os.path.isfile(p):
        raise ValueError("%s: no such file (want a directory saved by DAIN.save or dainx augment -model-out)"
                         % p)
    from . import predict
    _, info = predict(path, np.empty((0, 0), np.int32))  # loads and checks the model
    order, dims = info["order"], info["dims"]
    files = _read_model_files(path)
    side = _read_side(os.path.join(path, _PYTHON_FILE), order, dims)
    est = DAIN(**side["options"])
    est._model_files = files
    est.index_, est.value_, est.entities_ = side["index"], side["value"], None
    if side["entities"] is not None:
        pd = _pandas()
        est.entities_ = [pd.Index(ent, name=c) for c, ent in zip(est.index_, side["entities"])]
    elif os.path.lexists(os.path.join(path, _DICT_FILE)):
        dicts, est._dict_file = _read_dictionaries(os.path.join(path, _DICT_FILE), order, dims)
        pd = _pandas()
        est.index_ = [m["column"] for m in dicts["modes"]]
        est.value_ = dicts["value"] or "value"
        est.entities_, est._time_bins = [], {}
        for n, m in enumerate(dicts["modes"]):
            if m["kind"] == "time":
                est._time_bins[n] = (m["bin"], m["bin_seconds"], m["first_bin"], m["size"])
                starts = [_bin_start(m["bin"], m["bin_seconds"], m["first_bin"] + i) for i in range(m["size"])]
                est.entities_.append(pd.DatetimeIndex(pd.to_datetime(starts, unit="s", utc=True), name=m["column"]))
            else:
                est.entities_.append(pd.Index(m["ids"], name=m["column"]))
    est.report_ = side["report"]
    est.augmented_ = est.cell_scores_ = est.entity_importance_ = None
    return est


def _read_json(path, limit, limit_text):
    """(the JSON value, the bytes) of the file path, refused (ValueError)
    when over limit bytes (limit_text in words), not UTF-8, not JSON or
    unreadable; the error names the file."""
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
        if len(raw) > limit:
            raise ValueError("%s: larger than %s" % (path, limit_text))
        return json.loads(raw.decode("utf-8")), raw
    except UnicodeDecodeError as e:
        raise ValueError("%s: not UTF-8 text (%s)" % (path, e.reason)) from None
    except json.JSONDecodeError as e:
        raise ValueError("%s:%d: not JSON: %s" % (path, e.lineno, e.msg)) from None
    except (OSError, RecursionError) as e:
        raise ValueError("%s: cannot be read: %s" % (path, e)) from None


def _read_side(sp, order, dims):
    """python.json at sp checked against a model of the given order and
    dims, with defaults when there is none; ValueError naming the field."""
    side = {"index": None, "value": None, "entities": None, "options": {}, "report": None}
    if not os.path.lexists(sp):
        return side
    got, _ = _read_json(sp, 64 << 20, "64 MiB")

    def bad(field, why):
        return ValueError("%s: %s: %s" % (sp, field, why))

    if not isinstance(got, dict):
        raise ValueError("%s: want a JSON object, got %s" % (sp, type(got).__name__))
    if got.get("format") != _PYTHON_FORMAT:
        raise bad("format", "%s, want %r (not a dainx python.json)" % (_short(got.get("format")), _PYTHON_FORMAT))
    if got.get("version") != 1 or isinstance(got.get("version"), bool):
        raise bad("version", "%s; this dainx reads version 1" % _short(got.get("version")))
    for key in ("index", "value", "entities", "options", "report"):
        if key not in got:
            raise bad(key, "missing")
    index, value, entities = got["index"], got["value"], got["entities"]
    options, report = got["options"], got["report"]
    if not isinstance(options, dict):
        raise bad("options", "want an object, got %s" % type(options).__name__)
    for k in options:
        if not k.isidentifier():
            raise bad("options", "%s is not an option name" % _short(k))
    if report is not None and not isinstance(report, dict):
        raise bad("report", "want an object or null, got %s" % type(report).__name__)
    if index is None:
        if value is not None or entities is not None:
            raise bad("index", "null, but value or entities are set (a model fitted on arrays has none)")
    else:
        if not isinstance(index, list) or not all(isinstance(c, str) for c in index):
            raise bad("index", "want a list of column names (strings)")
        if len(index) != order:
            raise bad("index", "%d columns, the model's order is %d" % (len(index), order))
        if len(set(index)) != len(index):
            raise bad("index", "a column appears twice")
        if not isinstance(value, str):
            raise bad("value", "want the value column's name (a string), got %s" % type(value).__name__)
        if value in index:
            raise bad("value", "%s is also an index column" % _short(value))
        if not isinstance(entities, list) or len(entities) != order:
            raise bad("entities", "want a list of %d ID lists, one per index column" % order)
        for m, ent in enumerate(entities):
            if not isinstance(ent, list):
                raise bad("entities[%d]" % m, "want a list of IDs, got %s" % type(ent).__name__)
            if len(ent) != dims[m]:
                raise bad("entities[%d]" % m, "%d IDs for column %r, the model's mode %d has %d entities"
                          % (len(ent), index[m], m + 1, dims[m]))
            for k, v in enumerate(ent):
                if not isinstance(v, (str, int, float, bool)):
                    raise bad("entities[%d][%d]" % (m, k), "an ID must be a string, number or boolean, got %s"
                              % type(v).__name__)
            if len(set(ent)) != len(ent):
                raise bad("entities[%d]" % m, "an ID of column %r appears twice" % index[m])
    return {"index": index, "value": value, "entities": entities, "options": options, "report": report}


def _bin_of(secs, unit, seconds):
    """The bins (int64 array) of the Unix seconds secs (int64 array)."""
    if unit == "month":
        pd = _pandas()
        t = pd.to_datetime(secs, unit="s", utc=True)
        return ((t.year - 1970) * 12 + t.month - 1).to_numpy().astype(np.int64)
    if unit == "week":
        return np.floor_divide(secs - 4 * 86400, seconds)
    return np.floor_divide(secs, seconds)


def _bin_start(unit, seconds, n):
    """The start of bin n, in Unix seconds."""
    if unit == "month":
        import datetime
        y, m = divmod(n, 12)
        return int(datetime.datetime(1970 + y, m + 1, 1, tzinfo=datetime.timezone.utc).timestamp())
    if unit == "week":
        return 4 * 86400 + n * seconds
    return n * seconds


def _time_index(col, name, unit, seconds, first, size):
    """The indices of the times in col (Unix seconds, datetimes or ISO
    8601 text) in a time mode of bins unit/seconds from bin first, size
    bins; ValueError for a time that is not one or is outside them."""
    pd = _pandas()
    if pd.api.types.is_datetime64_any_dtype(col):
        t = pd.to_datetime(col, utc=True)
    else:
        num = pd.to_numeric(col, errors="coerce")
        if num.notna().all():
            secs = np.floor(num.to_numpy(dtype=np.float64)).astype(np.int64)
            t = None
        else:
            try:
                t = pd.to_datetime(col, utc=True)
            except (ValueError, TypeError) as e:
                raise ValueError("predict: column %r: not times (Unix seconds or ISO 8601): %s" % (name, e)) from None
    if t is not None:
        if t.isna().any():
            raise ValueError("predict: column %r: a missing time in row %r" % (name, col.index[int(np.argmax(t.isna()))]))
        secs = np.floor_divide(t.astype("int64").to_numpy(), 10 ** 9)
    pos = _bin_of(secs, unit, seconds) - first
    bad = (pos < 0) | (pos >= size)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError("predict: column %r: time %r (row %r) is outside the model's %d bins of %s (fold-in of new "
                         "times is not supported yet)" % (name, col.iloc[k], col.index[k], size, unit or seconds))
    return pos.astype(np.int32)


def _read_dictionaries(dp, order, dims):
    """dictionaries.json at dp checked against a model of the given order
    and dims (untrusted: sizes before anything is built from them);
    ValueError naming the field."""
    got, raw = _read_json(dp, 1 << 30, "1 GiB")

    def bad(field, why):
        return ValueError("%s: %s: %s" % (dp, field, why))

    if not isinstance(got, dict) or got.get("format") != _DICT_FORMAT:
        raise bad("format", "not a dainx dictionaries file")
    if got.get("version") != 1 or isinstance(got.get("version"), bool):
        raise bad("version", "%s; this dainx reads version 1" % _short(got.get("version")))
    modes, value = got.get("modes"), got.get("value", "")
    if not isinstance(value, str):
        raise bad("value", "want a column name")
    if not isinstance(modes, list) or len(modes) != order:
        raise bad("modes", "want %d modes (the model's order)" % order)
    seen = set()
    for n, m in enumerate(modes):
        where = "modes[%d]" % n
        if not isinstance(m, dict) or not isinstance(m.get("column"), str) or not m["column"]:
            raise bad(where, "want an object with a column name")
        if m["column"] in seen or m["column"] == value:
            raise bad(where + ".column", "%s named twice" % _short(m["column"]))
        seen.add(m["column"])
        size = m.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size != dims[n]:
            raise bad(where + ".size", "%s, the model's mode %d has %d entities" % (_short(size), n + 1, dims[n]))
        if m.get("kind") == "time":
            unit = m.get("bin")
            secs = m.get("bin_seconds")
            first = m.get("first_bin")
            if unit in _BINS:
                ok = secs == _BINS[unit]
            else:
                ok = isinstance(unit, str) and unit.isdigit() and secs == int(unit) and secs > 0
                unit = ""
            if not ok or not isinstance(first, int) or isinstance(first, bool) or abs(first) > 1 << 40:
                raise bad(where, "a time mode wants bin, bin_seconds and first_bin that agree")
            m["bin"] = unit
        elif m.get("kind") in ("int", "string", "mixed"):
            ids = m.get("ids")
            if not isinstance(ids, list) or len(ids) != size:
                raise bad(where + ".ids", "want a list of %d IDs" % size)
            for k, v in enumerate(ids):
                if not isinstance(v, (str, int, float, bool)):
                    raise bad("%s.ids[%d]" % (where, k), "an ID must be a string, number or boolean")
            if len(set(ids)) != len(ids):
                raise bad(where + ".ids", "an ID appears twice")
        else:
            raise bad(where + ".kind", "%s, want int, string, mixed or time" % _short(m.get("kind")))
    return got, raw
