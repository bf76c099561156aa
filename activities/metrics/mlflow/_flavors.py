"""The submodules of porch's mlflow stand-in: model flavors (mlflow.sklearn,
mlflow.pytorch, ...), mlflow.pyfunc, mlflow.tracking, mlflow.models,
mlflow.entities and mlflow.exceptions. They are built here and registered in
sys.modules, so `import mlflow.sklearn` and `from mlflow.models.signature
import infer_signature` work without a file per submodule."""

import os
import sys
import time
import types

FLAVORS = (
    "catboost", "diviner", "fastai", "gluon", "h2o", "keras", "langchain", "lightgbm", "onnx",
    "openai", "paddle", "pmdarima", "prophet", "pytorch", "sentence_transformers", "shap",
    "sklearn", "spacy", "spark", "statsmodels", "tensorflow", "transformers", "xgboost",
)

# The first parameter's name in each flavor's save_model, for scripts that pass it by name.
MODEL_ARGS = ("sk_model", "pytorch_model", "xgb_model", "lgb_model", "cb_model", "spark_model",
              "keras_model", "tf_saved_model_dir", "fastai_learner", "h2o_model", "statsmodels_model",
              "onnx_model", "pd_model", "pr_model", "gluon_model", "spacy_model", "transformers_model",
              "python_model", "model", "diviner_model", "explainer", "lc_model")

PICKLE = "model.pkl"


def _model_and_path(args, kwargs):
    args = list(args)
    model = None
    for name in MODEL_ARGS:
        if name in kwargs:
            model = kwargs.pop(name)
            break
    else:
        if args:
            model = args.pop(0)
    path = kwargs.pop("path", None)
    if path is None and args:
        path = args.pop(0)
    return model, path


def _mlmodel(flavor, artifact_path, run_id):
    lines = ["artifact_path: %s" % (artifact_path or ""), "flavors:"]
    if flavor == "sklearn":
        # The layout real mlflow writes with serialization_format pickle, so
        # a real mlflow.sklearn.load_model reads the folder too.
        lines += [
            "  python_function:",
            "    loader_module: mlflow.sklearn",
            "    model_path: %s" % PICKLE,
            "    python_version: %s" % sys.version.split()[0],
            "  sklearn:",
            "    pickled_model: %s" % PICKLE,
            "    serialization_format: pickle",
        ]
    lines += ["  porch:", "    flavor: %s" % flavor, "    pickled_model: %s" % PICKLE]
    if run_id:
        lines.append("run_id: %s" % run_id)
    lines.append("utc_time_created: '%s'" % time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()))
    return "\n".join(lines) + "\n"


def _save(mlflow, flavor, model, path, artifact_path=None):
    import pickle

    if path is None:
        raise mlflow.MlflowException("mlflow.%s.save_model: give the folder to save to as path" % flavor)
    path = os.fspath(path)
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise mlflow.MlflowException("path %r already exists and is not empty: save the model to a new folder" % path)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, PICKLE), "wb") as f:
        pickle.dump(model, f)
    run = mlflow.active_run()
    with open(os.path.join(path, "MLmodel"), "w", encoding="utf-8") as f:
        f.write(_mlmodel(flavor, artifact_path, run.info.run_id if run else None))


def _local_path(mlflow, model_uri):
    uri = os.fspath(model_uri)
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("runs:/"):
        # runs:/<run id>/<artifact path>: this step's own logged model.
        parts = uri[len("runs:/"):].split("/", 1)
        return os.path.join("outputs", parts[1] if len(parts) > 1 else "")
    if "://" in uri or uri.startswith("models:/"):
        raise mlflow.MlflowException("model %r: porch's mlflow loads models from local folders only: pass the folder the model was saved to" % uri)
    return uri


def _load(mlflow, model_uri):
    path = _local_path(mlflow, model_uri)
    if os.path.isdir(path):
        path = os.path.join(path, PICKLE)
    if not os.path.exists(path):
        raise mlflow.MlflowException("no model at %r: porch's mlflow reads %s saved by save_model or log_model" % (path, PICKLE))
    import pickle

    with open(path, "rb") as f:
        return pickle.load(f)


def _flavor(mlflow, name):
    mod = types.ModuleType("mlflow." + name, "porch's stand-in for mlflow.%s: autolog is a no-op, models are pickled." % name)

    def autolog(*args, **kwargs):
        """Does nothing: porch records what the script logs itself."""

    def save_model(*args, **kwargs):
        """Pickles the model into the folder path, with an MLmodel file."""
        model, path = _model_and_path(args, kwargs)
        _save(mlflow, name, model, path)

    def log_model(*args, **kwargs):
        """Saves the model under ./outputs/<artifact_path>."""
        model, artifact_path = _model_and_path(args, kwargs)
        artifact_path = kwargs.pop("artifact_path", None) or artifact_path or kwargs.get("name") or "model"
        mlflow._ensure_run()
        _save(mlflow, name, model, os.path.join("outputs", artifact_path), artifact_path)
        mlflow._write([{"kind": "artifact", "key": artifact_path}])
        return types.SimpleNamespace(artifact_path=artifact_path, model_uri="runs:/%s/%s" % (mlflow.active_run().info.run_id, artifact_path))

    def load_model(model_uri, *args, **kwargs):
        """Unpickles a model saved by save_model or log_model."""
        return _load(mlflow, model_uri)

    mod.autolog, mod.save_model, mod.log_model, mod.load_model = autolog, save_model, log_model, load_model
    return mod


class PythonModel:
    """mlflow.pyfunc.PythonModel: subclass it and define predict."""

    def load_context(self, context):
        """Called before predict; does nothing by default."""

    def predict(self, context, model_input, params=None):
        """Returns predictions for model_input."""
        raise NotImplementedError("define predict in your PythonModel")


class PyFuncModel:
    """What mlflow.pyfunc.load_model returns: a model with predict(data)."""

    def __init__(self, model):
        self._model = model
        if isinstance(model, PythonModel):
            model.load_context(None)

    def predict(self, data, params=None):
        """Calls the wrapped model's predict."""
        if isinstance(self._model, PythonModel):
            return self._model.predict(None, data)
        return self._model.predict(data)

    def unwrap_python_model(self):
        """Returns the wrapped model."""
        return self._model


def _pyfunc(mlflow):
    mod = _flavor(mlflow, "pyfunc")
    mod.PythonModel = PythonModel
    mod.PyFuncModel = PyFuncModel

    def save_model(path, *args, **kwargs):
        """Pickles python_model into the folder path."""
        _save(mlflow, "pyfunc", kwargs.get("python_model"), path)

    def load_model(model_uri, *args, **kwargs):
        """Loads a model saved by any flavor, wrapped to predict(data)."""
        return PyFuncModel(_load(mlflow, model_uri))

    mod.save_model, mod.load_model = save_model, load_model
    return mod


def _entities():
    mod = types.ModuleType("mlflow.entities", "Metric, Param and RunTag, as MlflowClient.log_batch takes them.")

    class Metric:
        def __init__(self, key, value, timestamp=None, step=None, **kwargs):
            self.key, self.value, self.timestamp, self.step = key, value, timestamp, step

    class Param:
        def __init__(self, key, value):
            self.key, self.value = key, value

    class RunTag:
        def __init__(self, key, value):
            self.key, self.value = key, value

    mod.Metric, mod.Param, mod.RunTag = Metric, Param, RunTag
    return mod


def _tracking(mlflow, entities):
    mod = types.ModuleType("mlflow.tracking", "MlflowClient, recording to PORCH_METRICS_FILE like the fluent API.")

    class MlflowClient:
        """Records what it is given; the run_id arguments are ignored."""

        def __init__(self, *args, **kwargs):
            pass

        def log_metric(self, run_id, key, value, timestamp=None, step=None, **kwargs):
            mlflow._write([mlflow._metric(key, value, step)])

        def log_param(self, run_id, key, value, **kwargs):
            mlflow._write([{"kind": "param", "key": str(key), "value": str(value)}])
            return value

        def set_tag(self, run_id, key, value, **kwargs):
            mlflow._write([{"kind": "tag", "key": str(key), "value": str(value)}])

        def log_batch(self, run_id, metrics=(), params=(), tags=(), **kwargs):
            records = [mlflow._metric(m.key, m.value, m.step) for m in metrics]
            records += [{"kind": "param", "key": str(p.key), "value": str(p.value)} for p in params]
            records += [{"kind": "tag", "key": str(t.key), "value": str(t.value)} for t in tags]
            mlflow._write(records)

        def create_run(self, experiment_id=None, *args, **kwargs):
            return mlflow.ActiveRun(mlflow.RunInfo(mlflow._new_id(), kwargs.get("run_name"), experiment_id or "0"))

        def set_terminated(self, run_id, status=None, **kwargs):
            pass

        def get_run(self, run_id):
            return mlflow.get_run(run_id)

        def log_artifact(self, run_id, local_path, artifact_path=None):
            mlflow.log_artifact(local_path, artifact_path)

        def log_text(self, run_id, text, artifact_file):
            mlflow.log_text(text, artifact_file)

        def log_dict(self, run_id, dictionary, artifact_file):
            mlflow.log_dict(dictionary, artifact_file)

    mod.MlflowClient = MlflowClient
    mod.get_tracking_uri, mod.set_tracking_uri = mlflow.get_tracking_uri, mlflow.set_tracking_uri
    return mod


def _models():
    models = types.ModuleType("mlflow.models", "infer_signature and ModelSignature; porch keeps no signatures.")
    signature = types.ModuleType("mlflow.models.signature")

    class ModelSignature:
        def __init__(self, inputs=None, outputs=None, params=None):
            self.inputs, self.outputs, self.params = inputs, outputs, params

    def infer_signature(model_input=None, model_output=None, params=None):
        """Returns an empty signature."""
        return ModelSignature()

    for m in (models, signature):
        m.ModelSignature, m.infer_signature = ModelSignature, infer_signature
    models.signature = signature
    return models, signature


def install(mlflow):
    """Builds the submodules and registers them on mlflow and in sys.modules."""
    subs = {name: _flavor(mlflow, name) for name in FLAVORS}

    def sklearn_autolog(*args, **kwargs):
        """Autologs scikit-learn, as mlflow.autolog does."""
        mlflow._sklearn.autolog(mlflow, **kwargs)

    subs["sklearn"].autolog = sklearn_autolog
    subs["sklearn"].__doc__ = "porch's stand-in for mlflow.sklearn: autolog as mlflow.autolog, models are pickled."
    subs["pyfunc"] = _pyfunc(mlflow)
    subs["entities"] = _entities()
    subs["tracking"] = _tracking(mlflow, subs["entities"])
    subs["models"], signature = _models()
    exceptions = types.ModuleType("mlflow.exceptions")
    exceptions.MlflowException = mlflow.MlflowException
    subs["exceptions"] = exceptions
    for name, mod in subs.items():
        setattr(mlflow, name, mod)
        sys.modules["mlflow." + name] = mod
    sys.modules["mlflow.models.signature"] = signature
    mlflow.MlflowClient = subs["tracking"].MlflowClient
