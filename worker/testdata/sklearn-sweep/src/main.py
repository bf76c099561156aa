# Trains an SVM on the iris data as azureml-examples' scikit-learn iris
# sweep does: it logs nothing itself, mlflow.autolog() logs the estimator's
# parameters and training metrics.
import argparse
import csv

import mlflow
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC


def main(args):
    # enable auto logging
    mlflow.autolog()

    params = {"C": args.C, "kernel": args.kernel, "coef0": args.coef0}
    X, y = read_iris(args.iris_csv)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
    model = SVC(**params)
    model.fit(X_train, y_train)
    print("test accuracy", model.score(X_test, y_test))


def read_iris(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    X = np.array([[float(r[k]) for k in ("sepal_length", "sepal_width", "petal_length", "petal_width")] for r in rows])
    y = np.array([r["species"] for r in rows])
    return X, y


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iris-csv", type=str)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--kernel", type=str, default="rbf")
    parser.add_argument("--coef0", type=float, default=0)
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
