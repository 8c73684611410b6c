"""Tenant codes of an index's rows and resolution of a query's ``tenant`` argument, shared
by the BM25 and name indexes so that both answer for exactly one tenant the same way."""

from __future__ import annotations

import operator

import numpy as np
import numpy.typing as npt

from ..errors import DataError, ParameterError, UnknownTenantError

__all__ = ["Tenants", "check_int"]

I64 = npt.NDArray[np.int64]


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ParameterError(
            f"invalid parameter {name}: expected an integer >= {minimum}, got {value!r}"
        )
    v = operator.index(value)
    if v < minimum:
        raise ParameterError(f"invalid parameter {name}: {name} = {v} must be >= {minimum}")
    return v


class Tenants:
    """Tenant codes of the rows of an index, and resolution of the ``tenant`` argument.

    Known tenants are the codes in ``range(n_tenants)`` when ``n_tenants`` is given (a
    tenant without rows is then known and gets empty results), else the codes that occur.
    ``tenant=None`` names the only known tenant; it is an error when there are several.
    """

    def __init__(self, tenants: npt.ArrayLike | None, n_rows: int, n_tenants: int | None):
        if tenants is None:
            codes = np.zeros(n_rows, dtype=np.int64)
        else:
            arr = np.asarray(tenants)
            if arr.ndim != 1 or len(arr) != n_rows:
                raise DataError(
                    f"tenants: expected a 1-D array of {n_rows} tenant codes (one per row), "
                    f"got shape {arr.shape}"
                )
            if arr.dtype.kind not in "iu":
                if (
                    arr.dtype.kind == "O"
                    and n_rows
                    and all(
                        isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                        for v in arr.tolist()
                    )
                ):
                    arr = arr.astype(np.int64)
                elif n_rows:
                    raise DataError(
                        f"tenants: expected integer tenant codes, got dtype {arr.dtype}"
                    )
                else:
                    arr = np.zeros(0, dtype=np.int64)
            if arr.dtype == np.uint64 and n_rows and int(arr.max()) > np.iinfo(np.int64).max:
                raise DataError(f"tenants: code {int(arr.max())} does not fit in int64")
            codes = arr.astype(np.int64)
        self.codes: I64 = codes
        uniq = np.unique(codes)
        if n_tenants is not None:
            n_t = check_int("n_tenants", n_tenants, 0)
            bad = np.flatnonzero((codes < 0) | (codes >= n_t))
            if len(bad):
                r = int(bad[0])
                raise DataError(
                    f"tenants: row {r} has tenant code {int(codes[r])}, outside "
                    f"0..{n_t - 1} (n_tenants = {n_t})"
                )
            self.known: I64 = np.arange(n_t, dtype=np.int64)
        elif tenants is None:
            self.known = np.zeros(1, dtype=np.int64)
        else:
            self.known = uniq
        #: Dense rank of each row's tenant among ``known`` (sorted codes).
        self.rank: I64 = np.searchsorted(self.known, codes).astype(np.int64)
        #: Tenant code -> its rank (what :meth:`resolve` looks up).
        self._rank_of: dict[int, int] = {c: i for i, c in enumerate(self.known.tolist())}

    def extended(self, codes: I64, rank: I64) -> Tenants:
        """These rows' tenants followed by appended rows of ``codes`` (known tenants only,
        ``rank`` their ranks, both checked by the caller); known tenants unchanged."""
        out = object.__new__(Tenants)
        out.codes = np.concatenate([self.codes, codes])
        out.known = self.known
        out.rank = np.concatenate([self.rank, rank])
        out._rank_of = self._rank_of
        return out

    def resolve(self, tenant: object) -> int:
        """The rank (index into ``known``) of the tenant argument, or -1 for an index that
        knows no tenant at all (empty, given no ``n_tenants``: every query is empty)."""
        if tenant is None:
            if len(self.known) > 1:
                shown = self.known[:10].tolist()
                more = ", ..." if len(self.known) > 10 else ""
                raise ParameterError(
                    f"invalid parameter tenant: the index holds {len(self.known)} tenants "
                    f"({', '.join(map(str, shown))}{more}); name one"
                )
            return 0 if len(self.known) else -1
        if isinstance(tenant, bool) or not isinstance(tenant, (int, np.integer)):
            raise ParameterError(
                f"invalid parameter tenant: expected an integer tenant code or None, got {tenant!r}"
            )
        t = int(tenant)
        i = self._rank_of.get(t)
        if i is None:
            raise UnknownTenantError(f"unknown tenant {t}: the index holds no such tenant code")
        return i
