# A minimal parallel entry script: porch calls init() once per process and
# run() once per mini-batch.
def init():
    pass


def run(mini_batch):
    return list(mini_batch)
