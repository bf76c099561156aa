"""Generate a small synthetic binary classification data set (standard library only).

Two classes drawn from Gaussian blobs in four features, split into train.csv and
test.csv under --out.
"""
import argparse
import csv
import os
import random

FEATURES = ["x1", "x2", "x3", "x4"]
# The direction that separates the classes; x4 is pure noise.
WEIGHTS = [1.5, -2.0, 0.75, 0.0]


def sample(rng, noise):
    label = rng.random() < 0.5
    sign = 1.0 if label else -1.0
    row = [sign * w * 0.5 + rng.gauss(0.0, noise) + 3.0 for w in WEIGHTS]
    return row, int(label)


def write(path, rows):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(FEATURES + ["label"])
        for features, label in rows:
            out.writerow([f"{v:.6f}" for v in features] + [label])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n-samples", type=int, required=True)
    p.add_argument("--noise", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--test-fraction", type=float, required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()

    rng = random.Random(args.seed)
    rows = [sample(rng, args.noise) for _ in range(args.n_samples)]
    n_test = max(1, int(len(rows) * args.test_fraction))
    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "train.csv"), rows[n_test:])
    write(os.path.join(args.out, "test.csv"), rows[:n_test])
    print(f"prepare: {len(rows) - n_test} training rows, {n_test} test rows in {args.out}")


if __name__ == "__main__":
    main()
