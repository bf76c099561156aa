"""Scores the sweep's best model on the test split."""
import argparse
import csv
import json
import math
import os

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--model", required=True)
p.add_argument("--report", required=True)
args = p.parse_args()

with open(os.path.join(args.model, "model.json")) as f:
    m = json.load(f)
with open(os.path.join(args.data, "test.csv")) as f:
    rows = list(csv.reader(f))[1:]
right = 0
for r in rows:
    x, y = [float(v) for v in r[:-1]], int(r[-1])
    z = sum(a * c for a, c in zip(m["weights"], x)) + m["bias"]
    right += (z > 0) == bool(y)
acc = right / len(rows)
os.makedirs(args.report, exist_ok=True)
with open(os.path.join(args.report, "report.txt"), "w") as f:
    f.write("best model: learning_rate %g, l2 %g\ntest accuracy %.4f\n" % (m["learning_rate"], m["l2"], acc))
print("best model: learning_rate %g, l2 %g; test accuracy %.4f" % (m["learning_rate"], m["l2"], acc))
