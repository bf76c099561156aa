# Trains as a script written for Azure ML does, with mlflow.autolog(), and
# writes to expected.json the metrics MLflow's sklearn autologging would log,
# computed here with sklearn's own (unpatched) functions.
import json
import math
import sys

import mlflow

mlflow.autolog(log_models=False, exclusive=False, silent=True)
assert "sklearn" not in sys.modules, "autolog imported sklearn"

from sklearn.datasets import load_iris  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.metrics import _classification as C, _ranking as R, _regression as G  # noqa: E402
from sklearn.metrics import accuracy_score, f1_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

X, y = load_iris(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
want = {}


def classifier(model, X, y):
    p = model.predict(X)
    w = {"average": "weighted"}
    out = {
        "training_precision_score": C.precision_score(y, p, **w),
        "training_recall_score": C.recall_score(y, p, **w),
        "training_f1_score": C.f1_score(y, p, **w),
        "training_accuracy_score": C.accuracy_score(y, p),
    }
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        out["training_log_loss"] = C.log_loss(y, proba)
        out["training_roc_auc"] = R.roc_auc_score(y, proba, average="weighted", multi_class="ovo")
    out["training_score"] = C.accuracy_score(y, p)
    return out


with mlflow.start_run():
    svc = SVC(C=0.7, kernel="linear", coef0=0.2).fit(X_train, y_train)
    want["svc"] = classifier(svc, X_train, y_train)
    y_pred = svc.predict(X_test)
    f1_score(y_test, y_pred, average="macro")
    f1_score(y_test, y_pred, average="micro")
    accuracy_score(y_test[:5], svc.predict(X_test[:5]))
    svc.score(X_test, y_test)
    want["svc"]["f1_score_X_test"] = C.f1_score(y_test, y_pred, average="macro")
    want["svc"]["f1_score-2_X_test"] = C.f1_score(y_test, y_pred, average="micro")
    want["svc"]["accuracy_score_unknown_dataset"] = C.accuracy_score(y_test[:5], y_pred[:5])
    want["svc"]["SVC_score_X_test"] = C.accuracy_score(y_test, y_pred)
    # A Pipeline logs once, as itself: its steps' fits log nothing.
    pipe = Pipeline([("scale", StandardScaler()), ("lr", LogisticRegression())]).fit(X_train, y_train)
    want["pipe"] = classifier(pipe, X_train, y_train)
    # Without a variable of its own in the caller, data keeps the name it has in the outermost frame.
    def evaluate(model, data, labels):
        return accuracy_score(labels, model.predict(data))
    evaluate(pipe, X_test, y_test)
    # The second accuracy_score call in this run: call index 2.
    want["pipe"]["accuracy_score-2_X_test"] = C.accuracy_score(y_test, pipe.predict(X_test))
    reg = LinearRegression().fit(X_train[:, :3], X_train[:, 3])
    p = reg.predict(X_train[:, :3])
    mse = G.mean_squared_error(X_train[:, 3], p)
    want["reg"] = {
        "training_mean_squared_error": mse,
        "training_mean_absolute_error": G.mean_absolute_error(X_train[:, 3], p),
        "training_r2_score": G.r2_score(X_train[:, 3], p),
        "training_root_mean_squared_error": math.sqrt(mse),
        "training_score": G.r2_score(X_train[:, 3], p),
    }

mlflow.sklearn.autolog(disable=True)
SVC().fit(X_train, y_train)  # logs nothing
with open("expected.json", "w") as f:
    json.dump(want, f)
