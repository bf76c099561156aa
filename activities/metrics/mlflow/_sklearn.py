"""Autologging for scikit-learn in porch's mlflow stand-in.

mlflow.autolog() and mlflow.sklearn.autolog() record what MLflow's sklearn
autologging records, under the same names, so a sweep whose primary metric
is training_f1_score (say) finds it:

- before the outermost fit, fit_transform or fit_predict of an estimator:
  its get_params(deep=True) as params (deep=False for GridSearchCV and
  RandomizedSearchCV), and the tags estimator_name and estimator_class;
- after it, from the data given to fit: for a classifier
  training_precision_score, training_recall_score, training_f1_score
  (average="weighted", or "binary" with pos_label), training_accuracy_score,
  and with predict_proba training_log_loss and training_roc_auc; for a
  regressor training_mean_squared_error, training_mean_absolute_error,
  training_r2_score and training_root_mean_squared_error; for any estimator
  with score, training_score;
- post-training metrics: a sklearn.metrics function called on what
  predict, predict_proba, predict_log_proba or transform of an autologged
  estimator returned, and that estimator's score, as
  "<metric>[-<call index>]_<dataset>": <metric> is the function's name (or
  "<Class>_score"), the call index counts from 2 the repeated calls of one
  metric, <dataset> is the name of the variable passed to predict or score,
  "unknown_dataset" when it has none, with "-<n>" from 2 on when different
  data went by the same name.

Fits inside a fit (a Pipeline's steps, a search's candidates) log nothing,
nor, as in MLflow, do the fits of sklearn.preprocessing, sklearn.impute,
sklearn.feature_extraction and sklearn.feature_selection estimators.
Models, artifacts, datasets and child runs are not logged. Nothing of
sklearn is imported here: the patches go in when sklearn.base and
sklearn.metrics are imported, or at once if they already are.
"""

import functools
import inspect
import math
import numbers
import sys
import types
import weakref

_FITS = ("fit", "fit_transform", "fit_predict")
_PREDICTIONS = ("predict", "predict_proba", "predict_log_proba", "transform")
# sklearn.metrics names that build scorers rather than compute a metric.
_NOT_METRICS = {"check_scoring", "get_scorer", "make_scorer", "get_scorer_names"}
_UNKNOWN = "unknown_dataset"
# Data preparation, not learning: MLflow autologs these only inside a
# Pipeline (sklearn's metrics also fit a LabelEncoder).
_NOT_LOGGED = ("sklearn.preprocessing", "sklearn.impute", "sklearn.feature_extraction", "sklearn.feature_selection")


class _State:
    mlflow = None
    installed = False
    enabled = False
    post_training = True
    silent = False
    pos_label = None
    # More than 0 while a patched call runs: calls made inside it (a
    # Pipeline's steps, predict inside score, metrics inside fit) log
    # nothing. Process-wide, not per thread, because estimators such as
    # RandomForestClassifier fit their parts in threads.
    busy = 0


_state = _State()
_models = weakref.WeakKeyDictionary()  # autologged estimator -> run key
_predictions = {}  # id(prediction) -> (run key, dataset name, the prediction or None)
_datasets = {}  # (run key, name) -> ids of the data seen under that name
_calls = {}  # (run key, metric name) -> calls so far


def autolog(mlflow, disable=False, log_post_training_metrics=True, silent=False, pos_label=None, **ignored):
    """Turns sklearn autologging on (or off with disable=True); MLflow's
    other arguments (log_models, exclusive, ...) are accepted and ignored."""
    _state.mlflow = mlflow
    _state.enabled = not disable
    _state.post_training = bool(log_post_training_metrics)
    _state.silent = bool(silent)
    _state.pos_label = pos_label
    if disable or _state.installed:
        return
    _state.installed = True
    _after_import("sklearn.base", _hook_estimators)
    _after_import("sklearn.metrics", _patch_metrics)


def _warn(message):
    if not _state.silent:
        print("porch's mlflow: autolog: " + message, file=sys.stderr)


# --- running code once a module is imported, without importing it --------


class _Loader:
    """Wraps a module's loader to run a callback once the module has run."""

    def __init__(self, loader, callback):
        self._loader = loader
        self._callback = callback

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name):
        # get_resource_reader, get_source and the rest stay the real loader's.
        return getattr(self._loader, name)


class _Finder:
    """A sys.meta_path entry that finds nothing itself: it wraps the loader
    of the modules it waits for, as the other finders find them."""

    def __init__(self):
        self.waiting = {}  # module name -> callback

    def find_spec(self, name, path=None, target=None):
        callback = self.waiting.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if not hasattr(spec.loader, "exec_module"):
            return spec
        del self.waiting[name]
        if not self.waiting and self in sys.meta_path:
            sys.meta_path.remove(self)
        spec.loader = _Loader(spec.loader, callback)
        return spec


_finder = _Finder()


def _after_import(name, callback):
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _finder.waiting[name] = callback
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


# --- patching ------------------------------------------------------------


def _hook_estimators(base):
    """Patches every estimator class there is, and, through BaseEstimator's
    __init_subclass__, every one defined later."""
    est = base.BaseEstimator
    if getattr(est, "_porch_autolog_hooked", False):
        return
    seen, todo = set(), [est]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            _patch_class(cls)
            todo.extend(cls.__subclasses__())
    own = est.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kwargs):
        if own is not None:
            own.__get__(None, cls)(**kwargs)
        else:
            super(est, cls).__init_subclass__(**kwargs)
        _patch_class(cls)

    est.__init_subclass__ = classmethod(init_subclass)
    est._porch_autolog_hooked = True


def _patch_class(cls):
    wrappers = [(name, _wrap_fit) for name in _FITS] + [(name, _wrap_prediction) for name in _PREDICTIONS]
    for name, wrap in wrappers + [("score", _wrap_score)]:
        # Patch where the method is defined (possibly a mixin), once.
        owner = next((k for k in cls.__mro__ if name in vars(k)), object)
        if owner is object:
            continue
        raw = vars(owner)[name]
        try:
            if isinstance(raw, types.FunctionType):
                if not hasattr(raw, "_porch_autolog"):
                    setattr(owner, name, wrap(raw))
            elif isinstance(getattr(raw, "fn", None), types.FunctionType) and hasattr(raw, "check"):
                # sklearn's available_if: a descriptor calling raw.fn.
                if not hasattr(raw.fn, "_porch_autolog"):
                    raw.fn = wrap(raw.fn)
        except (AttributeError, TypeError):
            pass  # a class that cannot be patched is not autologged


def _patch_metrics(metrics):
    for name in getattr(metrics, "__all__", ()):
        fn = getattr(metrics, name, None)
        if name in _NOT_METRICS or name.startswith("plot_") or not isinstance(fn, types.FunctionType):
            continue
        if not hasattr(fn, "_porch_autolog"):
            setattr(metrics, name, _wrap_metric(name, fn))


def _ours(fn):
    fn._porch_autolog = True
    return fn


def _quiet():
    return not _state.enabled or _state.busy > 0


def _call(original, *args, **kwargs):
    _state.busy += 1
    try:
        return original(*args, **kwargs)
    finally:
        _state.busy -= 1


def _wrap_fit(original):
    @functools.wraps(original)
    def fit(self, *args, **kwargs):
        if _quiet() or not hasattr(self, "get_params") or type(self).__module__.startswith(_NOT_LOGGED):
            return original(self, *args, **kwargs)
        _state.busy += 1
        try:
            run = _run_key()
            _log_estimator(self)
            result = original(self, *args, **kwargs)
            _log_training_metrics(self, _fit_data(original, args, kwargs))
            try:
                _models[self] = run
            except TypeError:
                pass  # not weakly referable: no post-training metrics
            return result
        finally:
            _state.busy -= 1

    return _ours(fit)


def _wrap_prediction(original):
    @functools.wraps(original)
    def predict(self, *args, **kwargs):
        run = _run_of(self)
        if run is None:
            return original(self, *args, **kwargs)
        result = _call(original, self, *args, **kwargs)
        data = _first_arg(original, args, kwargs)
        _remember(result, run, _dataset_name(run, data, sys._getframe(1)))
        return result

    return _ours(predict)


def _wrap_score(original):
    @functools.wraps(original)
    def score(self, *args, **kwargs):
        run = _run_of(self)
        if run is None:
            return original(self, *args, **kwargs)
        data = _first_arg(original, args, kwargs)
        dataset = _dataset_name(run, data, sys._getframe(1))
        value = _call(original, self, *args, **kwargs)
        _log_post_training(run, type(self).__name__ + "_score", dataset, value)
        return value

    return _ours(score)


def _wrap_metric(name, original):
    @functools.wraps(original)
    def metric(*args, **kwargs):
        if _quiet() or not _state.post_training or not _predictions:
            return original(*args, **kwargs)
        found = _registered(list(args) + list(kwargs.values()))
        value = _call(original, *args, **kwargs)
        if found is not None:
            _log_post_training(found[0], name, found[1], value)
        return value

    return _ours(metric)


# --- what is logged ------------------------------------------------------


def _run_key():
    # MLflow logs to the active run, else to a run of the fit's own.
    run = _state.mlflow.active_run()
    return run.info.run_id if run is not None else _state.mlflow._new_id()


def _run_of(model):
    """The run an autologged estimator was fitted in, when its predictions
    and scores are to be logged, else None."""
    if _quiet() or not _state.post_training:
        return None
    try:
        return _models.get(model)
    except TypeError:
        return None


def _positional(original):
    try:
        params = list(inspect.signature(original).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _arg(args, kwargs, names, i):
    if i < len(args):
        return args[i]
    return kwargs.get(names[i]) if i < len(names) else None


def _first_arg(original, args, kwargs):
    return _arg(args, kwargs, _positional(original), 0)


def _fit_data(original, args, kwargs):
    """X, y and sample_weight as given to fit (y and sample_weight may be None)."""
    names = _positional(original)
    weight = _arg(args, kwargs, names, names.index("sample_weight")) if "sample_weight" in names else None
    return _arg(args, kwargs, names, 0), _arg(args, kwargs, names, 1), weight


def _is_search(model):
    search = sys.modules.get("sklearn.model_selection._search")
    return search is not None and isinstance(model, getattr(search, "BaseSearchCV", ()))


def _log_estimator(model):
    mlflow = _state.mlflow
    try:
        # A search's candidates are not its parameters: MLflow logs them shallow.
        params = model.get_params(deep=not _is_search(model))
    except Exception as e:  # noqa: BLE001  (a broken get_params must not break fit)
        _warn("the parameters of %s are not logged: %s" % (type(model).__name__, e))
        params = {}
    cls = type(model)
    records = [{"kind": "param", "key": str(k), "value": str(v)} for k, v in params.items()]
    records.append({"kind": "tag", "key": "estimator_name", "value": cls.__name__})
    records.append({"kind": "tag", "key": "estimator_class", "value": cls.__module__ + "." + cls.__name__})
    mlflow._write(records)


def _loggable(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and type(value).__name__ != "bool_"


class _Metrics:
    """Training metrics computed one by one: one that fails is left out
    with a warning, as MLflow does."""

    def __init__(self):
        self.values = []

    def add(self, name, compute):
        try:
            value = compute()
        except Exception as e:  # noqa: BLE001
            _warn("%s is not logged: %s" % (name, e))
            return None
        if _loggable(value):
            self.values.append((name, value))
        return value


def _classifier(out, m, model, X, y, weight):
    pred = model.predict(X)
    pos = _state.pos_label
    avg = {"average": "weighted"} if pos is None else {"average": "binary", "pos_label": pos}
    out.add("training_precision_score", lambda: m.precision_score(y, pred, sample_weight=weight, **avg))
    out.add("training_recall_score", lambda: m.recall_score(y, pred, sample_weight=weight, **avg))
    out.add("training_f1_score", lambda: m.f1_score(y, pred, sample_weight=weight, **avg))
    out.add("training_accuracy_score", lambda: m.accuracy_score(y, pred, normalize=True, sample_weight=weight))
    if not hasattr(model, "predict_proba"):
        return
    proba = model.predict_proba(X)
    out.add("training_log_loss", lambda: m.log_loss(y, proba, sample_weight=weight))
    # Binary: the scores of the greater label; more classes: one-vs-one.
    scores = proba[:, 1] if len(proba[0]) == 2 else proba
    out.add("training_roc_auc", lambda: m.roc_auc_score(y, scores, average="weighted", sample_weight=weight, multi_class="ovo"))


def _regressor(out, m, model, X, y, weight):
    pred = model.predict(X)
    kw = {"sample_weight": weight, "multioutput": "uniform_average"}
    mse = out.add("training_mean_squared_error", lambda: m.mean_squared_error(y, pred, **kw))
    out.add("training_mean_absolute_error", lambda: m.mean_absolute_error(y, pred, **kw))
    out.add("training_r2_score", lambda: m.r2_score(y, pred, **kw))
    if mse is not None:
        out.add("training_root_mean_squared_error", lambda: math.sqrt(mse))


def _log_training_metrics(model, data):
    import sklearn.base
    import sklearn.metrics as m

    X, y, weight = data
    out = _Metrics()
    kind = _classifier if sklearn.base.is_classifier(model) else _regressor if sklearn.base.is_regressor(model) else None
    if kind is not None and y is not None:
        try:
            kind(out, m, model, X, y, weight)
        except Exception as e:  # noqa: BLE001
            _warn("the training metrics of %s are not logged: %s" % (type(model).__name__, e))
    if hasattr(model, "score"):
        with_weight = weight is not None and "sample_weight" in _positional(type(model).score)
        out.add("training_score", lambda: model.score(X, y, sample_weight=weight) if with_weight else model.score(X, y))
    mlflow = _state.mlflow
    if out.values:
        mlflow._write([mlflow._metric(k, v, None) for k, v in out.values])


def _remember(prediction, run, dataset):
    key = id(prediction)
    try:
        weakref.finalize(prediction, _predictions.pop, key, None)
        _predictions[key] = (run, dataset, None)
    except TypeError:
        # Not weakly referable (a list): kept, so its id is not reused.
        _predictions[key] = (run, dataset, prediction)


def _registered(values):
    """(run, dataset) of the first value that is a remembered prediction."""
    for v in values:
        if v is None or isinstance(v, (str, bytes, numbers.Number)):
            continue
        hit = _predictions.get(id(v))
        if hit is not None and (hit[2] is None or hit[2] is v):
            return hit[0], hit[1]
    return None


def _holds(value, data):
    if value is data:
        return True
    if isinstance(value, tuple):
        return any(v is data for v in value)
    if isinstance(value, dict):
        return any(v is data for v in value.values())
    return False


def _variable_name(data, frame):
    """The name data has in the outermost frame it was not handed to as an
    argument, or unknown_dataset (an expression such as X[:5])."""
    while frame is not None:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
        local = frame.f_locals
        if any(_holds(local.get(a), data) for a in code.co_varnames[:n]):
            frame = frame.f_back
            continue
        for name, value in local.items():
            if value is data:
                return name
        return _UNKNOWN
    return _UNKNOWN


def _dataset_name(run, data, frame):
    name = _UNKNOWN if data is None else _variable_name(data, frame)
    seen = _datasets.setdefault((run, name), [])
    if id(data) not in seen:
        seen.append(id(data))
    i = seen.index(id(data))
    return name if i == 0 else "%s-%d" % (name, i + 1)


def _log_post_training(run, metric, dataset, value):
    if not _loggable(value):
        return
    n = _calls.get((run, metric), 0)
    _calls[(run, metric)] = n + 1
    key = "%s%s_%s" % (metric, "" if n == 0 else "-%d" % (n + 1), dataset)
    mlflow = _state.mlflow
    mlflow._write([mlflow._metric(key, value, None)])
