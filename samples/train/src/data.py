"""Reading the CSV files prepare.py writes."""
import csv
import os


def load(folder, name):
    """Return (features, labels) of folder/name."""
    features, labels = [], []
    with open(os.path.join(folder, name), newline="") as f:
        for row in csv.DictReader(f):
            labels.append(int(row.pop("label")))
            features.append([float(v) for v in row.values()])
    return features, labels
