"""Trains a one-hidden-layer neural network on a two-class data set by
stochastic gradient descent, standard library only. After every epoch it
reports the validation loss (the sweep's primary metric) and accuracy with
mlflow, as an Azure ML training script does; porch's own mlflow module
records them when no real mlflow is installed. Writes the trained network
as JSON to --model.
"""
import argparse
import csv
import json
import math
import os
import random
import time

import mlflow

p = argparse.ArgumentParser()
p.add_argument("--data", required=True, help="CSV file with columns x, y, label")
p.add_argument("--learning_rate", type=float, required=True)
p.add_argument("--hidden", type=int, required=True, help="hidden units")
p.add_argument("--epochs", type=int, default=30)
p.add_argument("--model", required=True, help="folder to write model.json to")
p.add_argument("--pause", type=float, default=0.0,
               help="seconds to wait after each epoch: this network trains in a blink, a real one does not")
args = p.parse_args()

with open(args.data) as f:
    rows = [([float(r["x"]), float(r["y"])], int(r["label"])) for r in csv.DictReader(f)]
train, valid = rows[: len(rows) * 3 // 4], rows[len(rows) * 3 // 4 :]

rng = random.Random(1)
w1 = [[rng.gauss(0, 1) for _ in range(2)] for _ in range(args.hidden)]
b1 = [0.0] * args.hidden
w2 = [rng.gauss(0, 1 / math.sqrt(args.hidden)) for _ in range(args.hidden)]
b2 = 0.0


def forward(x):
    h = [math.tanh(w[0] * x[0] + w[1] * x[1] + b) for w, b in zip(w1, b1)]
    z = sum(a * c for a, c in zip(w2, h)) + b2
    return h, 1 / (1 + math.exp(-max(min(z, 30), -30)))


def evaluate(data):
    loss = right = 0
    for x, label in data:
        q = min(max(forward(x)[1], 1e-9), 1 - 1e-9)
        loss -= math.log(q if label else 1 - q)
        right += (q > 0.5) == bool(label)
    return loss / len(data), right / len(data)


with mlflow.start_run():
    mlflow.log_params({"learning_rate": args.learning_rate, "hidden": args.hidden})
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(train)
        for x, label in train:
            h, q = forward(x)
            g = q - label  # d(log loss)/dz
            for j in range(args.hidden):
                gh = g * w2[j] * (1 - h[j] * h[j])
                w2[j] -= args.learning_rate * g * h[j]
                w1[j][0] -= args.learning_rate * gh * x[0]
                w1[j][1] -= args.learning_rate * gh * x[1]
                b1[j] -= args.learning_rate * gh
            b2 -= args.learning_rate * g
        loss, acc = evaluate(valid)
        mlflow.log_metrics({"loss": loss, "accuracy": acc}, step=epoch)
        print("epoch %d: validation loss %.4f, accuracy %.3f" % (epoch, loss, acc), flush=True)
        time.sleep(args.pause)

os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.json"), "w") as f:
    json.dump({"learning_rate": args.learning_rate, "hidden": args.hidden, "loss": loss,
               "accuracy": acc, "w1": w1, "b1": b1, "w2": w2, "b2": b2}, f)
print("model written to", args.model)
