"""Print the loop-nest point kernels that symgrad generates for each W3 formulation.

    python benchmarks/w3_kernels.py [--n 50] [index ...]

Indices select formulations in the order of ``workloads/w3_pair_sums.FORMULATIONS``
(all by default). Use a fresh ``SYMGRAD_CACHE_DIR`` to see the code the current compiler
writes.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks.workloads import w3_pair_sums as w  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("index", nargs="*", type=int)
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    for k, name in enumerate(w.FORMULATIONS):
        if args.index and k not in args.index:
            continue
        P = sg.placeholder("P", data["P"].shape)
        E = w.FORMULATIONS[name][0](P, w.constants(data))
        fn = sg.function([P], [E, *sg.gradients(E, [P])], target="cpu")
        print("=" * 20, k, name)
        for m in re.finditer(r"# nest \d+, \w+ kernel.*?\n\n", fn.source, re.S):
            print(m.group(0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
