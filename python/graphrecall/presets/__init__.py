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
from pathlib import Path
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


def detect_preset(path: str | os.PathLike[str]) -> PresetName | None:
    """The preset of a path when its file names leave no doubt, else None: a folder with
    LightRAG's ``graph_chunk_entity_relation.graphml``; a folder with GraphRAG's
    ``text_units.parquet`` (or ``create_final_*.parquet``) and entities but no graphrecall
    ``facts.parquet``; a ``.graphml`` file; a HippoRAG ``openie*.json`` file. Neo4j CSV
    exports are not told apart from other CSV files."""
    p = Path(path)
    if p.is_dir():
        if (p / "graph_chunk_entity_relation.graphml").is_file():
            return "lightrag"
        if not (p / "facts.parquet").exists() and (
            ((p / "entities.parquet").is_file() and (p / "text_units.parquet").is_file())
            or (p / "create_final_entities.parquet").is_file()
        ):
            return "graphrag"
        return None
    if p.suffix.lower() == ".graphml":
        return "graphml"
    if p.name.startswith("openie") and p.suffix.lower() == ".json":
        return "hipporag"
    return None


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
    "detect_preset",
    "list_presets",
    "load_graphml",
    "load_graphrag",
    "load_hipporag",
    "load_lightrag",
    "load_neo4j",
    "load_preset",
]
