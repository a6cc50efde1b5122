"""What the examples share: ``--no-plot`` and ``--out DIR``, a figure saved only when
matplotlib is installed (``pip install -e ".[bench]"``), and a one-line exit when an
optional extra an example needs is missing.

Not an example itself (tests/test_examples.py skips files starting with ``_``).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from types import ModuleType
from typing import Optional, Sequence

from symgrad.extras import require

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "figures"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--no-plot`` and ``--out DIR`` to ``parser``."""
    parser.add_argument("--no-plot", action="store_true", help="do not draw the figure")
    parser.add_argument("--out", default=str(DEFAULT_OUT), metavar="DIR",
                        help="folder for the figure (default: examples/figures)")
    return parser


def arguments(doc: str, argv: Optional[Sequence[str]] = None,
              size: Optional[tuple] = None) -> argparse.Namespace:
    """The parsed command line of an example: ``--no-plot``, ``--out`` and, where given,
    one optional positional ``size`` = ``(name, default, help)``."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    if size is not None:
        name, default, text = size
        parser.add_argument(name, type=int, nargs="?", default=default, help=text)
    return add_arguments(parser).parse_args(argv)


def need(module: str, extra: str) -> ModuleType:
    """``import module``, or one line on stderr naming the extra to install and exit code 2."""
    try:
        return require(module, extra=extra, why="this example")
    except ModuleNotFoundError as exc:
        print(f"{pathlib.Path(sys.argv[0]).name}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def pyplot(args: argparse.Namespace) -> Optional[ModuleType]:
    """matplotlib.pyplot (non-interactive), or None with one line when ``--no-plot`` was
    given or matplotlib is not installed."""
    if args.no_plot:
        return None
    try:
        matplotlib = require("matplotlib", extra="bench", why="the example's figure")
    except ModuleNotFoundError as exc:
        print(f"no figure: {exc}")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, args: argparse.Namespace, name: str) -> pathlib.Path:
    """Write ``fig`` to ``args.out/name``, close it and say where it went."""
    import matplotlib.pyplot as plt

    folder = pathlib.Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"figure: {path}")
    return path
