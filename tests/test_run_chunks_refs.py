"""``threaded_matmul.run_chunks`` and the threaded ``matmul`` keep no reference to their
arguments once they return: a pool thread that still held the caller's output freed it
after the caller's next allocation, so the heap grew and was trimmed on every call and each
parallel call faulted its output's pages in again (W2: about 200 page faults, 0.6 ms of
system time a call; a 4096x64 @ 64x256 matmul: 115 faults, 0.46 ms)."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from symgrad.compile.kernel_lib.threaded_matmul import matmul, run_chunks


def _write(c: int, nc: int, out: np.ndarray) -> int:
    lo, hi = c * out.size // nc, (c + 1) * out.size // nc
    out[lo:hi] = c
    return hi - lo


def test_arguments_are_released_when_run_chunks_returns():
    gc.disable()   # only reference counts may free the array
    try:
        for _ in range(20):
            out = np.empty(1000)
            ref = weakref.ref(out)
            assert run_chunks(_write, 8, out, threads=2) == 1000
            assert out[0] == 0 and out[-1] == 7
            del out
            assert ref() is None
    finally:
        gc.enable()


def test_threaded_matmul_releases_its_output_when_it_returns():
    a, b = np.ones((512, 8)), np.ones((8, 64))
    gc.disable()
    try:
        for _ in range(20):
            out = matmul(a, b, 2, min_work=0)
            assert out.shape == (512, 64) and (out == 8.0).all()
            ref = weakref.ref(out)
            del out
            assert ref() is None
    finally:
        gc.enable()
