"""Compute accuracy, precision, recall and log loss of the predictions."""
import argparse
import csv
import json
import math
import os


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--predictions", required=True)
    p.add_argument("--threshold", type=float, required=True)
    p.add_argument("--metrics", required=True)
    args = p.parse_args()

    with open(args.predictions, newline="") as f:
        rows = [(int(r["label"]), float(r["score"])) for r in csv.DictReader(f)]
    tp = sum(1 for y, s in rows if y == 1 and s >= args.threshold)
    fp = sum(1 for y, s in rows if y == 0 and s >= args.threshold)
    fn = sum(1 for y, s in rows if y == 1 and s < args.threshold)
    correct = sum(1 for y, s in rows if (s >= args.threshold) == (y == 1))
    eps = 1e-9
    clipped = [(y, min(max(s, eps), 1 - eps)) for y, s in rows]
    metrics = {
        "rows": len(rows),
        "accuracy": correct / len(rows),
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "log_loss": -sum(y * math.log(s) + (1 - y) * math.log(1 - s) for y, s in clipped) / len(rows),
    }
    os.makedirs(os.path.dirname(args.metrics) or ".", exist_ok=True)
    with open(args.metrics, "w") as f:
        json.dump(metrics, f, indent=2)
    print("evaluate: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()))


if __name__ == "__main__":
    main()
