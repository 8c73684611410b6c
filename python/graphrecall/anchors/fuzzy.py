"""How fuzzy name matching batches its comparisons: one tenant's names sorted by length, and
the split of a query's n-grams into ``rapidfuzz.process.cdist`` calls of least modelled cost."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["CDIST_PER_CHOICE", "CDIST_PER_PAIR", "FuzzyTenant", "fuzzy_groups"]

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FuzzyTenant:
    """One tenant's distinct normalised names, by character length (for fuzzy search)."""

    keys: list[str]
    lengths: I64
    hits: list[tuple[tuple[int, int], ...]]  # (row, entry) per key, by row


#: Cost model of ``rapidfuzz.process.cdist`` (ns, measured on x86-64 with AVX2): each
#: choice costs about this much to convert, once per call ...
CDIST_PER_CHOICE = 90.0
#: ... and each (query, choice) pair about this much to score (``fuzz.ratio``, SIMD).
CDIST_PER_PAIR = 9.0


def fuzzy_groups(keys: list[str], lengths: I64, s: float) -> list[tuple[int, int, int, int]]:
    """Split n-grams (sorted by length) into groups, each scored by one ``cdist`` call
    against the names of a compatible length, at the least modelled cost.

    ``fuzz.ratio(a, b) >= 100 s`` needs ``2 min(la, lb) / (la + lb) >= s``, so a name's
    length lies in ``[la s / (2 - s), la (2 - s) / s]``; a group's window is the union of
    its n-grams' windows (names are sorted by length, so it is a slice). One call per
    n-gram would convert each name again; one call for all compares every n-gram with
    every name. Dynamic programming over the sorted n-grams picks the cheapest split.

    Returns:
        ``(a, b, lo, hi)``: n-grams ``keys[a:b]`` against names ``lo:hi``; empty windows
        are left out.
    """
    m = len(keys)
    if s > 0.0:
        lo = np.searchsorted(
            lengths, [math.floor(len(k) * s / (2.0 - s)) for k in keys], "left"
        ).tolist()
        hi = np.searchsorted(
            lengths, [math.ceil(len(k) * (2.0 - s) / s) for k in keys], "right"
        ).tolist()
    else:
        lo, hi = [0] * m, [len(lengths)] * m
    best = [0.0] * (m + 1)
    cut = [0] * (m + 1)
    for b in range(1, m + 1):
        best[b] = math.inf
        for a in range(b):
            width = max(hi[b - 1] - lo[a], 0)
            cost = best[a] + width * (CDIST_PER_CHOICE + CDIST_PER_PAIR * (b - a))
            if cost < best[b]:
                best[b], cut[b] = cost, a
    out: list[tuple[int, int, int, int]] = []
    b = m
    while b > 0:
        a = cut[b]
        if hi[b - 1] > lo[a]:
            out.append((a, b, lo[a], hi[b - 1]))
        b = a
    return out[::-1]
