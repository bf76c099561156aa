"""Trains a logistic regression by stochastic gradient descent, standard
library only, and reports accuracy on a held-out split after every epoch with
mlflow, as an Azure ML training script does. Writes the model as JSON."""
import argparse
import csv
import json
import math
import os
import random

import mlflow

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--learning_rate", type=float, required=True)
p.add_argument("--l2", type=float, default=0.0)
p.add_argument("--epochs", type=int, default=20)
p.add_argument("--model", required=True)
args = p.parse_args()


def load(path):
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    return [([float(v) for v in r[:-1]], int(r[-1])) for r in rows]


def predict(w, b, x):
    z = sum(a * c for a, c in zip(w, x)) + b
    return 1.0 / (1.0 + math.exp(-max(min(z, 30), -30)))


def accuracy(w, b, rows):
    return sum((predict(w, b, x) > 0.5) == bool(y) for x, y in rows) / len(rows)


rows = load(os.path.join(args.data, "train.csv"))
rng = random.Random(0)
rng.shuffle(rows)
split = int(len(rows) * 0.8)
train, valid = rows[:split], rows[split:]
w, b = [0.0] * len(train[0][0]), 0.0
with mlflow.start_run():
    mlflow.log_params({"learning_rate": args.learning_rate, "l2": args.l2, "epochs": args.epochs})
    for epoch in range(1, args.epochs + 1):
        for x, y in train:
            g = predict(w, b, x) - y
            w = [wi - args.learning_rate * (g * xi + args.l2 * wi) for wi, xi in zip(w, x)]
            b -= args.learning_rate * g
        acc = accuracy(w, b, valid)
        mlflow.log_metric("accuracy", acc, step=epoch)
        print("epoch %d: validation accuracy %.4f" % (epoch, acc), flush=True)
os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.json"), "w") as f:
    json.dump({"weights": w, "bias": b, "learning_rate": args.learning_rate, "l2": args.l2}, f)
