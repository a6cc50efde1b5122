"""Print the loop-nest point kernels that symgrad generates for each W3 formulation.

    python benchmarks/w3_kernels.py [--n 50] [index ...]

Indices select formulations in the order of ``pair_sums.FORMULATIONS`` (the W3 forms, then
the masks-as-constants forms; all by default). Besides the kernels' point functions it
prints the nest's own: the cutoff gate (``_n<k>_cpu_gate``) and the outer point function
specialised per part of the loop (``_n<k>_cpu_o<m>``). Use a fresh ``SYMGRAD_CACHE_DIR``
to see the code the current compiler writes.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import symgrad as sg  # noqa: E402
from benchmarks import pair_sums  # noqa: E402
from benchmarks.workloads import w3_pair_sums as w  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("index", nargs="*", type=int)
    args = ap.parse_args(argv)
    data = w.make_data(args.n)
    for k, name in enumerate(pair_sums.FORMULATIONS):
        if args.index and k not in args.index:
            continue
        P = sg.placeholder("P", data["P"].shape)
        E = pair_sums.FORMULATIONS[name][0](P, w.constants(data))
        fn = sg.function([P], [E, *sg.gradients(E, [P])], target="cpu")
        print("=" * 20, k, name)
        for m in re.finditer(r"# nest \d+, \w+ kernel.*?\n\n", fn.source, re.S):
            print(m.group(0))
        for m in re.finditer(r"def _n\d+_cpu_(gate|o\d+)\(.*?\n\n", fn.source, re.S):
            print(m.group(0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
