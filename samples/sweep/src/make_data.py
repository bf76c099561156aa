"""Writes a synthetic binary classification data set: train.csv and test.csv.

Points in 8 dimensions whose scales differ by three orders of magnitude, so
the learning rate matters: too small learns the small-scale directions
slowly, too large overshoots on the large-scale ones. The label is 1 when a
fixed linear score plus noise is positive. Deterministic for a given --seed.
"""
import argparse
import csv
import os
import random

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=60000)
p.add_argument("--seed", type=int, default=7)
p.add_argument("--out", required=True)
args = p.parse_args()

rng = random.Random(args.seed)
scales = [10.0, 5.0, 1.0, 1.0, 0.3, 0.1, 0.05, 0.02]
weights = [0.1, -0.2, 0.5, -1.0, 3.0, -8.0, 20.0, 40.0]
os.makedirs(args.out, exist_ok=True)
for name, rows in (("train.csv", args.rows), ("test.csv", args.rows // 4)):
    with open(os.path.join(args.out, name), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x%d" % i for i in range(len(weights))] + ["label"])
        for _ in range(rows):
            x = [rng.gauss(0, s) for s in scales]
            score = sum(a * b for a, b in zip(weights, x)) + rng.gauss(0, 0.5)
            w.writerow(["%.5f" % v for v in x] + [1 if score > 0 else 0])
print("wrote", args.rows, "training rows to", args.out)
