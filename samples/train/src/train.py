"""Fit a logistic or linear model by stochastic gradient descent (standard library only)."""
import argparse
import json
import math
import os
import random

from data import load


def standardizer(xs):
    n = len(xs)
    means = [sum(col) / n for col in zip(*xs)]
    stds = [math.sqrt(sum((v - m) ** 2 for v in col) / n) or 1.0 for col, m in zip(zip(*xs), means)]
    return means, stds


def predict(w, b, x, model_type):
    z = b + sum(wi * xi for wi, xi in zip(w, x))
    if model_type == "logistic":
        return 1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0)))
    return z


def fit(xs, ys, args):
    w, b = [0.0] * len(xs[0]), 0.0
    order = list(range(len(xs)))
    rng = random.Random(0)
    for epoch in range(args.epochs):
        rng.shuffle(order)
        for i in order:
            err = predict(w, b, xs[i], args.model_type) - ys[i]
            w = [wi - args.learning_rate * (err * xi + args.l2 * wi) for wi, xi in zip(w, xs[i])]
            b -= args.learning_rate * err
    return w, b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--learning-rate", type=float, required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--standardize", required=True, help="True or False, as Azure ML renders booleans")
    p.add_argument("--model-type", choices=["logistic", "linear"], required=True)
    p.add_argument("--l2", type=float, default=0.0)
    p.add_argument("--model", required=True, help="the model file to write")
    args = p.parse_args()

    xs, ys = load(args.data, "train.csv")
    means, stds = [0.0] * len(xs[0]), [1.0] * len(xs[0])
    if args.standardize.lower() == "true":
        means, stds = standardizer(xs)
    xs = [[(v - m) / s for v, m, s in zip(x, means, stds)] for x in xs]
    w, b = fit(xs, ys, args)
    os.makedirs(os.path.dirname(args.model) or ".", exist_ok=True)
    with open(args.model, "w") as f:
        json.dump({"model_type": args.model_type, "weights": w, "bias": b, "means": means, "stds": stds}, f, indent=2)
    print(f"train: {args.model_type} model on {len(xs)} rows, weights {[round(v, 3) for v in w]}")
    # Azure ML collects ./outputs of the working folder as the step's artifacts.
    os.makedirs("outputs", exist_ok=True)
    with open(os.path.join("outputs", "training.json"), "w") as f:
        json.dump({"rows": len(xs), "epochs": args.epochs, "learning_rate": args.learning_rate}, f)


if __name__ == "__main__":
    main()
