"""Entry script of the file-list sample's parallel step: counts the lines
and words of each text file and finds its longest word. Python standard
library only.

As in Azure ML, init() runs once per process, run() once per mini-batch with
a list of file paths, and shutdown() once when the step ends. run() returns
one line per file, so it returns as many results as it was given items;
append_row_to concatenates every mini-batch's lines into one file.
"""
import argparse
import os
import re

args = None
counted = 0


def init():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--min_word_length", type=int, default=1)
    # parse_known_args: the parallel runtime adds flags of its own.
    args, _ = parser.parse_known_args()
    print("init: counting words of at least %d letters" % args.min_word_length)


def count(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    words = [w for w in re.findall(r"[a-z']+", text.lower()) if len(w) >= args.min_word_length]
    longest = max(words, key=len) if words else ""
    return "%s,%d,%d,%s" % (os.path.basename(path), len(text.splitlines()), len(words), longest)


def run(mini_batch):
    global counted
    results = [count(path) for path in mini_batch]
    counted += len(results)
    return results


def shutdown():
    print("shutdown: this process counted %d files" % counted)
