"""Downstream step of the file-list sample: reads the counts the parallel
step appended (one line per file: name,lines,words,longest) and writes a
summary. Python standard library only."""
import argparse
import csv
import os

parser = argparse.ArgumentParser()
parser.add_argument("--counts", required=True)
parser.add_argument("--summary", required=True)
args = parser.parse_args()

with open(args.counts, newline="", encoding="utf-8") as f:
    rows = [(name, int(lines), int(words), longest) for name, lines, words, longest in csv.reader(f)]

longest = max((r[3] for r in rows), key=len)
wordiest = max(rows, key=lambda r: r[2])
summary = "\n".join([
    "files %d" % len(rows),
    "lines %d" % sum(r[1] for r in rows),
    "words %d" % sum(r[2] for r in rows),
    "longest word %s" % longest,
    "most words %s (%d)" % (wordiest[0], wordiest[2]),
]) + "\n"
print(summary, end="")
with open(os.path.join(args.summary, "summary.txt"), "w", encoding="utf-8") as f:
    f.write(summary)
