"""Score the test set with a model written by train.py."""
import argparse
import csv
import json
import os

from data import load
from train import predict


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--predictions", required=True)
    args = p.parse_args()

    with open(args.model) as f:
        model = json.load(f)
    xs, ys = load(args.data, "test.csv")
    os.makedirs(os.path.dirname(args.predictions) or ".", exist_ok=True)
    with open(args.predictions, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["label", "score"])
        for x, y in zip(xs, ys):
            x = [(v - m) / s for v, m, s in zip(x, model["means"], model["stds"])]
            out.writerow([y, f"{predict(model['weights'], model['bias'], x, model['model_type']):.6f}"])
    print(f"score: {len(xs)} predictions in {args.predictions}")


if __name__ == "__main__":
    main()
