"""Writes moons.csv: two interleaving half circles with noise, a data set no
straight line separates, so a network needs enough hidden units to fit it.

    python3 make_moons.py > moons.csv

Deterministic: the committed moons.csv is this script's output.
"""
import math
import random

rng = random.Random(3)
print("x,y,label")
for i in range(400):
    label = i % 2
    t = rng.uniform(0, math.pi)
    if label == 0:
        x, y = math.cos(t), math.sin(t)
    else:
        x, y = 1 - math.cos(t), 0.5 - math.sin(t)
    print("%.4f,%.4f,%d" % (x + rng.gauss(0, 0.15), y + rng.gauss(0, 0.15), label))
