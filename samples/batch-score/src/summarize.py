"""Downstream step of the batch-score sample: reads the CSV the parallel
step appended and prints, per store and brand, the rows scored and the mean
absolute error. Python standard library only."""
import argparse
import csv
import os

parser = argparse.ArgumentParser()
parser.add_argument("--scores", required=True)
parser.add_argument("--summary", required=True)
args = parser.parse_args()

# append_row_to writes parallel_run_step.txt in a uri_folder output.
with open(os.path.join(args.scores, "parallel_run_step.txt"), newline="") as f:
    rows = list(csv.DictReader(f))

errors = {}
for r in rows:
    errors.setdefault((r["Store"], r["Brand"]), []).append(abs(float(r["Residual"])))
lines = ["rows %d, partitions %d" % (len(rows), len(errors))]
for (store, brand), errs in errors.items():
    lines.append("store %s %-10s rows %d  mean abs error %.0f" % (store, brand, len(errs), sum(errs) / len(errs)))
summary = "\n".join(lines) + "\n"
print(summary, end="")
with open(os.path.join(args.summary, "summary.txt"), "w") as f:
    f.write(summary)
