"""Where the plotting examples save their pictures (a helper, not an example).

A picture goes to the directory named by the environment variable
FGRAD_EXAMPLES_OUT when it is set, else to examples/figures/ beside the
examples; the directory is made when a picture is first saved. Nothing here
imports matplotlib: each example imports it itself, inside a try, and prints a
table and NO_MATPLOTLIB instead of a picture when it is missing.
"""

import os
from pathlib import Path

NO_MATPLOTLIB = 'matplotlib is not installed: pip install "fgrad[examples]" for the picture'


def output_path(name):
    """The path the picture `name` (e.g. "sine_derivative.png") is saved to."""
    out = os.environ.get("FGRAD_EXAMPLES_OUT")
    directory = Path(out) if out else Path(__file__).resolve().parent / "figures"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


def save(fig, name):
    """Save the matplotlib figure `fig` as `name` and say where; no window is opened."""
    path = output_path(name)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"saved {path}")
    return path
