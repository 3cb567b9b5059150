"""`python -m wattlog`: the same command as the `wattlog` console script."""

from wattlog.cli import run

if __name__ == "__main__":
    run()
