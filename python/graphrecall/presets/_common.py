"""What every preset shares: errors that name the file and column, and the builder that
collects entities, facts, chunks and mentions into :class:`~graphrecall.tables.GraphTables`."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError, StorageError
from ..tables import GraphTables

logger = logging.getLogger("graphrecall")

#: An entity, chunk or fact id as the tool wrote it (a str, or an int where the tool's ids
#: are ints, e.g. HippoRAG v1's passage positions).
Id = Hashable


def missing_file(path: Path, what: str) -> StorageError:
    """The error of a preset's file that is not there."""
    return StorageError(
        f"{path}: no such file ({what})", table=path.name, kind="missing", input=str(path)
    )


def missing_column(path: Path | str, column: str, have: Iterable[str]) -> DataError:
    """The error of a column (or key, or attribute) a preset's file lacks."""
    name = Path(path).name
    listed = sorted(str(c) for c in have)
    shown = ", ".join(listed[:20]) + (" ..." if len(listed) > 20 else "")
    return DataError(
        f"{path}: no column {column!r} (it has: {shown or 'none'})",
        table=name,
        column=column,
        kind="missing",
    )


def bad_value(path: Path | str, row: int, column: str, message: str, value: Any) -> DataError:
    """The error of one value a preset cannot read."""
    return DataError(
        f"{path}: row {row}, {column}: {message} ({value!r:.80})",
        table=Path(path).name,
        row=row,
        column=column,
        kind="invalid_value",
        input=value,
    )


def read_json(path: Path, what: str) -> Any:
    """A JSON file, or an error naming it."""
    if not path.is_file():
        raise missing_file(path, what)
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not UTF-8 ({exc})", table=path.name, kind="invalid_value"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            table=path.name,
            row=exc.lineno,
            kind="invalid_value",
        ) from None


def text_or_none(value: Any) -> str | None:
    """A text cell: None for null / NaN / empty, else its str."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value)
    return text if text else None


class TableBuilder:
    """Rows of entities, facts, chunks and mentions, collected as a preset reads its files.

    An entity id added twice keeps its first name, type and description (later ones fill
    only what is still empty); mentions of one (chunk, entity) pair add up their counts.
    """

    def __init__(self) -> None:
        self._entities: dict[Id, dict[str, Any]] = {}
        self._facts: list[dict[str, Any]] = []
        self._chunks: dict[Id, dict[str, Any]] = {}
        self._mentions: Counter[tuple[Id, Id]] = Counter()

    def __contains__(self, entity: Id) -> bool:
        return entity in self._entities

    def has_chunk(self, chunk: Id) -> bool:
        """Whether a chunk of this id was added."""
        return chunk in self._chunks

    def entity(
        self,
        id: Id,
        name: str | None = None,
        type: str | None = None,
        description: str | None = None,
    ) -> Id:
        """Add an entity (or fill the empty fields of one already added); returns its id."""
        row = self._entities.get(id)
        fields = {"name": name, "type": type, "description": description}
        if row is None:
            self._entities[id] = fields
        else:
            for k, v in fields.items():
                if row[k] is None and v is not None:
                    row[k] = v
        return id

    def fact(
        self,
        subject: Id,
        object: Id,
        *,
        predicate: str | None = None,
        description: str | None = None,
        strength: float | None = None,
        id: Id | None = None,
    ) -> None:
        """Add a fact between two entities (``strength`` None: 1.0)."""
        self._facts.append(
            {
                "id": id,
                "subject": subject,
                "object": object,
                "predicate": predicate,
                "description": description,
                "strength": 1.0 if strength is None else float(strength),
            }
        )

    def chunk(
        self,
        id: Id,
        text: str | None,
        *,
        tags: list[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Add a chunk (a later one of the same id is ignored)."""
        if id not in self._chunks:
            self._chunks[id] = {
                "text": text,
                "tags": list(tags or []),
                "metadata": dict(metadata) if metadata else None,
            }

    def tag(self, chunk: Id, tag: str) -> None:
        """Add a tag to a chunk already added."""
        tags: list[str] = self._chunks[chunk]["tags"]
        if tag not in tags:
            tags.append(tag)

    def mention(self, chunk: Id, entity: Id, count: int = 1) -> None:
        """Add ``count`` mentions of ``entity`` in ``chunk``."""
        self._mentions[(chunk, entity)] += count

    def tables(self) -> GraphTables:
        """The rows as tables (chunks and mentions only when there are any)."""
        ents = self._entities
        entities: dict[str, Any] = {"id": list(ents)}
        for col in ("name", "type", "description"):
            values = [r[col] for r in ents.values()]
            if any(v is not None for v in values):
                entities[col] = values
        facts: dict[str, Any] = {"subject": [f["subject"] for f in self._facts]}
        facts["object"] = [f["object"] for f in self._facts]
        for col in ("id", "predicate", "description", "strength"):
            values = [f[col] for f in self._facts]
            if any(v is not None for v in values) and (
                col != "id" or all(v is not None for v in values)
            ):
                facts[col] = values
        chunks: dict[str, Any] | None = None
        mentions: dict[str, Any] | None = None
        if self._chunks:
            rows = self._chunks.values()
            chunks = {
                "id": list(self._chunks),
                "text": [r["text"] for r in rows],
                "tags": [r["tags"] for r in rows],
            }
            if any(r["metadata"] is not None for r in rows):
                chunks["metadata"] = [r["metadata"] for r in rows]
        if self._mentions:
            pairs = list(self._mentions)
            mentions = {
                "chunk": [c for c, _ in pairs],
                "entity": [e for _, e in pairs],
                "count": list(self._mentions.values()),
            }
        return GraphTables(entities=entities, facts=facts, chunks=chunks, mentions=mentions)
