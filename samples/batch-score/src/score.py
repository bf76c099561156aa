"""Entry script of the batch-score sample's parallel step.

With partition_keys [Store, Brand], each mini-batch is one store's sales of
one brand, as a pandas DataFrame. run() fits a least-squares line of the
target column on the price for that partition, with pandas alone, and
returns one scored row per input row: append_row_to gathers the DataFrames
into one CSV with one header.
"""
import argparse
import os

import pandas as pd
from azureml_user.parallel_run import EntryScript

args = None
logger = None
decimals = 2


def init():
    global args, logger, decimals
    parser = argparse.ArgumentParser()
    parser.add_argument("--target_col", required=True)
    parser.add_argument("--feature_col", default="Price")
    # parse_known_args: the parallel runtime adds flags of its own.
    args, _ = parser.parse_known_args()
    decimals = int(os.environ.get("SCORE_DECIMALS", "2"))
    logger = EntryScript().logger
    logger.info("scoring %s on %s", args.target_col, args.feature_col)


def fit(x, y):
    """Least squares of y on x: the slope and intercept of the best line."""
    var = ((x - x.mean()) ** 2).sum()
    slope = ((x - x.mean()) * (y - y.mean())).sum() / var if var else 0.0
    return slope, y.mean() - slope * x.mean()


def run(mini_batch, mini_batch_context):
    key = mini_batch_context.partition_key_value
    x = mini_batch[args.feature_col].astype(float)
    y = mini_batch[args.target_col].astype(float)
    slope, intercept = fit(x, y)
    predicted = intercept + slope * x
    logger.info("store %s brand %s: %d weeks, %s = %.1f %+.1f * %s",
                key["Store"], key["Brand"], len(mini_batch), args.target_col,
                intercept, slope, args.feature_col)
    return pd.DataFrame({
        "Store": mini_batch["Store"],
        "Brand": mini_batch["Brand"],
        "WeekStarting": mini_batch["WeekStarting"],
        args.feature_col: x,
        args.target_col: y.astype(int),
        "Predicted": predicted.round(decimals),
        "Residual": (y - predicted).round(decimals),
    })
