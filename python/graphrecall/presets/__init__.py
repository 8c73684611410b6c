"""Other tools' outputs as :class:`~graphrecall.tables.GraphTables`, one loader per tool.

Each loader reads the files a tool writes, exactly as it writes them, and returns
unchecked tables (``GraphRAG.from_tables``, :meth:`GraphTables.check` and
``graphrecall index --from <preset>`` check them):

==============  =============================================  ========================
preset          reads                                          loader
==============  =============================================  ========================
``graphrag``    Microsoft GraphRAG's output Parquet folder     :func:`load_graphrag`
``hipporag``    HippoRAG's ``openie_*results*.json``           :func:`load_hipporag`
``lightrag``    LightRAG's working folder (GraphML + KV JSON)  :func:`load_lightrag`
``graphml``     a GraphML file or networkx node-link JSON      :func:`load_graphml`
``neo4j``       a Neo4j CSV export (neo4j-admin or APOC)       :func:`load_neo4j`
==============  =============================================  ========================

A missing file is a :class:`~graphrecall.errors.StorageError` and a missing column a
:class:`~graphrecall.errors.DataError`; both name the file (``.table``) and the column.

Example:
    >>> from graphrecall import GraphRAG
    >>> from graphrecall.presets import load_preset
    >>> tables = load_preset("lightrag", "rag_storage")  # doctest: +SKIP
    >>> rag = GraphRAG.from_tables(tables)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Literal, get_args

from ..errors import ParameterError
from ..tables import GraphTables
from .graphml import load_graphml
from .graphrag import load_graphrag
from .hipporag import load_hipporag
from .lightrag import load_lightrag
from .neo4j import load_neo4j

PresetName = Literal["graphrag", "hipporag", "lightrag", "graphml", "neo4j"]

#: The loader of each preset.
PRESETS: Mapping[str, Callable[[str | os.PathLike[str]], GraphTables]] = MappingProxyType(
    {
        "graphrag": load_graphrag,
        "hipporag": load_hipporag,
        "lightrag": load_lightrag,
        "graphml": load_graphml,
        "neo4j": load_neo4j,
    }
)


def list_presets() -> list[str]:
    """The preset names, sorted."""
    return sorted(PRESETS)


def load_preset(name: str, path: str | os.PathLike[str]) -> GraphTables:
    """Read another tool's output with the loader of preset ``name``.

    Raises:
        ParameterError: ``name`` is not a preset.
        StorageError, DataError: As the preset's loader.
    """
    loader = PRESETS.get(name)
    if loader is None:
        raise ParameterError(
            f"invalid parameter preset: {name!r} is not one of {list(get_args(PresetName))!r}"
        )
    return loader(path)


__all__ = [
    "PRESETS",
    "PresetName",
    "list_presets",
    "load_graphml",
    "load_graphrag",
    "load_hipporag",
    "load_lightrag",
    "load_neo4j",
    "load_preset",
]
