"""porch's stand-in for the mlflow tracking API.

porch puts this module (embedded in the porch binary) on a step's PYTHONPATH
when the step's Python cannot import a real mlflow, so training scripts
written for Azure ML run unmodified. It records what they log as JSON lines
in the file named by the environment variable PORCH_METRICS_FILE (appended,
one unbuffered write per call, safe across threads and processes); without
that variable it records nothing.

Lines (one JSON object each, "time" in seconds since the epoch):
    {"kind": "metric", "key", "value": number, "step": int | null, "time"}
    {"kind": "param" | "tag", "key", "value": string, "time"}
    {"kind": "artifact", "key": path under ./outputs, "time"}

A metric that is NaN or infinite is written as the JSON string "NaN",
"Infinity" or "-Infinity", so every line is valid JSON.

mlflow.autolog() and mlflow.sklearn.autolog() autolog scikit-learn as
MLflow names things (see _sklearn.py); other libraries' autolog is a no-op.
Models given to a flavor's save_model or log_model
are pickled (model.pkl, with an MLmodel file) and load_model unpickles them.
Files logged as artifacts land under ./outputs, which porch keeps with the
step's artifacts, as Azure ML does. Python 3.8+, standard library only.
"""

import json
import math
import os
import sys
import threading
import time
import types

__version__ = "2.0.0+porch"

_lock = threading.Lock()
_fds = {}  # (pid, path) -> fd
_runs = []  # the stack of active runs, innermost last
_tracking_uri = "file:./mlruns"
_experiment = None


class MlflowException(Exception):
    """Raised for a call mlflow would refuse."""


def _write(records):
    path = os.environ.get("PORCH_METRICS_FILE")
    if not path:
        return
    now = time.time()
    data = "".join(json.dumps(dict(r, time=now), allow_nan=False) + "\n" for r in records)
    data = data.encode("utf-8")
    with _lock:
        key = (os.getpid(), path)
        fd = _fds.get(key)
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            _fds[key] = fd
        # One write per call: appends of a few lines are not interleaved
        # with another process's.
        while data:
            n = os.write(fd, data)
            data = data[n:]


def _number(key, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise MlflowException("metric %r: value %r is not a number" % (key, value))
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _metric(key, value, step):
    return {
        "kind": "metric",
        "key": str(key),
        "value": _number(key, value),
        "step": None if step is None else int(step),
    }


def _new_id():
    return os.urandom(16).hex()


def _ensure_run():
    if not _runs:
        start_run()
    return _runs[-1]


def log_metric(key, value, step=None, *args, **kwargs):
    """Records one metric value."""
    _ensure_run()
    _write([_metric(key, value, step)])


def log_metrics(metrics, step=None, *args, **kwargs):
    """Records several metric values at once."""
    _ensure_run()
    _write([_metric(k, v, step) for k, v in metrics.items()])


def log_param(key, value, *args, **kwargs):
    """Records one parameter; returns the value, as mlflow does."""
    _ensure_run()
    _write([{"kind": "param", "key": str(key), "value": str(value)}])
    return value


def log_params(params, *args, **kwargs):
    """Records several parameters."""
    _ensure_run()
    _write([{"kind": "param", "key": str(k), "value": str(v)} for k, v in params.items()])


def set_tag(key, value, *args, **kwargs):
    """Records one tag."""
    _ensure_run()
    _write([{"kind": "tag", "key": str(key), "value": str(value)}])


def set_tags(tags, *args, **kwargs):
    """Records several tags."""
    _ensure_run()
    _write([{"kind": "tag", "key": str(k), "value": str(v)} for k, v in tags.items()])


class RunInfo:
    """What mlflow says about a run: run_id, run_name, status, times."""

    def __init__(self, run_id, run_name, experiment_id):
        self.run_id = run_id
        self.run_uuid = run_id
        self.run_name = run_name
        self.experiment_id = experiment_id
        self.status = "RUNNING"
        self.start_time = int(time.time() * 1000)
        self.end_time = None
        self.artifact_uri = os.path.abspath("outputs")
        self.lifecycle_stage = "active"


class RunData:
    """A run's logged data; porch keeps it in the metrics file, not here."""

    def __init__(self):
        self.metrics = {}
        self.params = {}
        self.tags = {}


class ActiveRun:
    """A started run; ending the with-block ends the run."""

    def __init__(self, info):
        self.info = info
        self.data = RunData()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        end_run("FINISHED" if exc_type is None else "FAILED")
        return False


def start_run(run_id=None, experiment_id=None, run_name=None, nested=False, tags=None, description=None, **kwargs):
    """Starts a run (nested inside the active one when nested=True)."""
    if _runs and not nested:
        raise MlflowException(
            "run %s is already active: end it with mlflow.end_run(), or start this one with nested=True"
            % _runs[-1].info.run_id
        )
    if run_id is None and not _runs:
        # The outermost run is the step's, as in Azure ML; nested runs get their own ids.
        run_id = os.environ.get("MLFLOW_RUN_ID") or os.environ.get("AZUREML_RUN_ID")
    run_id = run_id or _new_id()
    run = ActiveRun(RunInfo(run_id, run_name or run_id, experiment_id or "0"))
    _runs.append(run)
    if tags:
        set_tags(tags)
    return run


def end_run(status="FINISHED"):
    """Ends the innermost active run; does nothing when none is active."""
    if _runs:
        run = _runs.pop()
        run.info.status = status
        run.info.end_time = int(time.time() * 1000)


def active_run():
    """Returns the innermost active run, or None."""
    return _runs[-1] if _runs else None


def last_active_run():
    """Returns the innermost active run, or None."""
    return active_run()


def autolog(*args, **kwargs):
    """Turns on autologging for scikit-learn (see mlflow._sklearn), the one
    library porch's module autologs; takes mlflow.autolog's arguments."""
    _sklearn.autolog(sys.modules[__name__], **kwargs)


def set_tracking_uri(uri):
    """Remembers the URI; porch records to PORCH_METRICS_FILE regardless."""
    global _tracking_uri
    _tracking_uri = str(uri)


def get_tracking_uri():
    """Returns the URI given to set_tracking_uri."""
    return _tracking_uri


def get_registry_uri():
    """Returns the tracking URI."""
    return _tracking_uri


def set_registry_uri(uri):
    """Does nothing: porch has no model registry."""


def set_experiment(experiment_name=None, experiment_id=None):
    """Remembers the experiment's name and returns it as an object."""
    global _experiment
    _experiment = types.SimpleNamespace(name=experiment_name, experiment_id=experiment_id or "0")
    return _experiment


def create_experiment(name, *args, **kwargs):
    """Returns an experiment id."""
    return "0"


def get_experiment_by_name(name):
    """Returns the experiment set with set_experiment, if it has that name."""
    if _experiment is not None and _experiment.name == name:
        return _experiment
    return None


def get_artifact_uri(artifact_path=None):
    """Returns where artifacts land: ./outputs."""
    base = os.path.abspath("outputs")
    return os.path.join(base, artifact_path) if artifact_path else base


def _outputs(artifact_path, name):
    folder = os.path.join("outputs", artifact_path or "")
    os.makedirs(folder, exist_ok=True)
    dest = os.path.join(folder, name)
    _write([{"kind": "artifact", "key": os.path.relpath(dest, "outputs")}])
    return dest


def log_artifact(local_path, artifact_path=None, **kwargs):
    """Copies a file or folder under ./outputs."""
    import shutil

    _ensure_run()
    dest = _outputs(artifact_path, os.path.basename(os.path.normpath(local_path)))
    if os.path.abspath(local_path) == os.path.abspath(dest):
        return
    if os.path.isdir(local_path):
        shutil.copytree(local_path, dest, dirs_exist_ok=True)
    else:
        shutil.copyfile(local_path, dest)


def log_artifacts(local_dir, artifact_path=None, **kwargs):
    """Copies a folder's contents under ./outputs."""
    import shutil

    _ensure_run()
    dest = os.path.join("outputs", artifact_path or "")
    os.makedirs(dest, exist_ok=True)
    if os.path.abspath(local_dir) != os.path.abspath(dest):
        shutil.copytree(local_dir, dest, dirs_exist_ok=True)
    _write([{"kind": "artifact", "key": os.path.relpath(dest, "outputs")}])


def _split(artifact_file):
    return os.path.dirname(artifact_file), os.path.basename(artifact_file)


def log_text(text, artifact_file, **kwargs):
    """Writes text to ./outputs/<artifact_file>."""
    _ensure_run()
    with open(_outputs(*_split(artifact_file)), "w", encoding="utf-8") as f:
        f.write(text)


def log_dict(dictionary, artifact_file, **kwargs):
    """Writes a dict to ./outputs/<artifact_file> as JSON (YAML names get JSON too, which YAML reads)."""
    _ensure_run()
    with open(_outputs(*_split(artifact_file)), "w", encoding="utf-8") as f:
        json.dump(dictionary, f, indent=2, default=str)


def log_figure(figure, artifact_file, **kwargs):
    """Saves a matplotlib or plotly figure to ./outputs/<artifact_file>."""
    _ensure_run()
    dest = _outputs(*_split(artifact_file))
    if hasattr(figure, "savefig"):
        figure.savefig(dest)
    elif hasattr(figure, "write_html") and dest.endswith(".html"):
        figure.write_html(dest)
    elif hasattr(figure, "write_image"):
        figure.write_image(dest)
    else:
        raise MlflowException("log_figure: %r is neither a matplotlib nor a plotly figure" % type(figure).__name__)


def log_image(image, artifact_file=None, *args, **kwargs):
    """Saves a PIL image (or anything with save()) to ./outputs/<artifact_file>."""
    _ensure_run()
    if artifact_file is None:
        artifact_file = kwargs.get("key", "image") + ".png"
    dest = _outputs(*_split(artifact_file))
    if not hasattr(image, "save"):
        raise MlflowException("log_image: porch's mlflow saves PIL images only; convert the array with PIL.Image.fromarray")
    image.save(dest)


def log_input(*args, **kwargs):
    """Does nothing: porch tracks a step's inputs itself."""


def register_model(model_uri, name, *args, **kwargs):
    """Does nothing and returns a version object: porch has no model registry."""
    return types.SimpleNamespace(name=name, version="1", source=model_uri)


def get_run(run_id):
    """Returns the active run with that id, or raises."""
    for run in _runs:
        if run.info.run_id == run_id:
            return run
    raise MlflowException("run %r is not active in this process: porch's mlflow only knows active runs" % run_id)


from mlflow import _flavors, _sklearn  # noqa: E402  (need the functions above)

_flavors.install(sys.modules[__name__])
