"""The items the context formats print: result hits checked field by field, and provenance
paths as steps.

Text fields are printed with runs of whitespace (newlines included) collapsed to one space
(:func:`clean`), so a name or description can never break a block's layout.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Literal, NamedTuple, TypeAlias, TypeVar, cast

from ..errors import DataError, ParameterError
from ..recipes.hits import ChunkHit, EntityHit, FactHit, Step

__all__ = [
    "ChunkItem",
    "Direction",
    "EntityItem",
    "FactItem",
    "PathStep",
    "as_steps",
    "check_steps",
    "check_unique",
    "checked_items",
    "chunk_item",
    "clean",
    "entity_item",
    "fact_item",
    "object_text",
]

Direction: TypeAlias = Literal["out", "in"]
_T = TypeVar("_T")
#: One step of a provenance path: ``(entity_name, predicate, direction)``. The predicate is the
#: relation leaving this step's entity towards the next step's entity (``None`` on the last
#: step when the path ends on this entity); ``direction`` is ``"out"`` when this entity is the
#: fact's subject, ``"in"`` when it is the object. Seed 001's two-element form
#: ``(entity, relationship_type)`` is accepted too and means ``"out"``.
PathStep: TypeAlias = tuple[str, str | None, Direction] | tuple[str, str | None]

#: Smallest and largest unix seconds a ``since`` may hold (years 1..9999).
_SINCE_MIN = -62_135_596_800
_SINCE_MAX = 253_402_300_799


# --------------------------------------------------------------------------- validation


def _real(value: object, what: str, *, optional: bool = False) -> float | None:
    """``value`` as a float: a real number, not NaN, not a bool (``None`` if optional)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DataError(f"{what} must be a real number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise DataError(f"{what} is NaN")
    return x


def _int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DataError(f"{what} must be an int or None, got {value!r}")
    return int(value)


def _text(value: object, what: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise DataError(f"{what} must be a str{' or None' if optional else ''}, got {value!r}")
    return value


def _hashable(value: object, what: str, *, optional: bool = False) -> None:
    if value is None:
        if optional:
            return
        raise DataError(f"{what} must not be None")
    try:
        hash(value)
    except TypeError:
        raise DataError(f"{what} must be hashable, got {type(value).__name__}") from None


def as_steps(steps: Iterable[object]) -> tuple[object, ...]:
    """Provenance :class:`~graphrecall.recipes.Step` s as :data:`PathStep` tuples (tuples
    kept)."""
    return tuple((s.name, s.predicate, s.direction) if isinstance(s, Step) else s for s in steps)


def _path(steps: object, what: str) -> tuple[PathStep, ...]:
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        raise DataError(f"{what} must be a sequence of (name, predicate, direction) steps")
    out = as_steps(steps)
    check_steps(out, what, DataError)
    return out  # type: ignore[return-value]


def check_steps(
    steps: Sequence[object], what: str, error: type[ParameterError] | type[DataError]
) -> list[tuple[str, str | None, Direction]]:
    """Validated steps as 3-tuples; raises ``error`` naming ``what[i]``."""
    out: list[tuple[str, str | None, Direction]] = []
    for i, step in enumerate(steps):
        if not isinstance(step, tuple) or len(step) not in (2, 3):
            raise error(f"{what}[{i}] must be a (name, predicate[, direction]) tuple, got {step!r}")
        name, pred = step[0], step[1]
        direction = step[2] if len(step) == 3 else "out"
        if not isinstance(name, str):
            raise error(f"{what}[{i}] name must be a str, got {name!r}")
        if pred is not None and not isinstance(pred, str):
            raise error(f"{what}[{i}] predicate must be a str or None, got {pred!r}")
        if direction not in ("out", "in"):
            raise error(f"{what}[{i}] direction must be 'out' or 'in', got {direction!r}")
        if pred is None and i < len(steps) - 1:
            raise error(f"{what}[{i}] has no predicate but is not the last step")
        out.append((name, pred, cast(Direction, direction)))
    return out


# --------------------------------------------------------------------------- items


class EntityItem(NamedTuple):
    """A checked :class:`EntityHit` as the formatters read it."""

    id: Hashable
    name: str
    type: str | None
    description: str | None
    score: float
    path: tuple[PathStep, ...]


class FactItem(NamedTuple):
    """A checked :class:`FactHit` as the formatters read it."""

    id: Hashable
    subject_id: Hashable
    subject_name: str
    predicate: str
    object_id: Hashable | None
    object_name: str | None
    object_value: str | None
    confidence: float
    strength: float | None
    description: str | None
    since: int | None
    score: float
    hop: int | None
    path: tuple[PathStep, ...]


class ChunkItem(NamedTuple):
    """A checked :class:`ChunkHit` as the formatters read it."""

    id: Hashable
    text: str
    score: float
    source: str
    path: tuple[PathStep, ...]


def entity_item(e: EntityHit, what: str) -> EntityItem:
    """``e`` checked (an entity hit may carry a ``description`` for seed 003's sections).

    Raises:
        DataError: A field has the wrong type, or ``score`` is NaN.
    """
    _hashable(e.id, f"{what}.id")
    w = f"{what} ({e.id!r})"
    description = getattr(e, "description", None)
    _text(e.name, f"{w}.name")
    _text(e.type, f"{w}.type", optional=True)
    _text(description, f"{w}.description", optional=True)
    score = _real(e.score, f"{w}.score")
    return EntityItem(e.id, e.name, e.type, description, score, _path(e.path, f"{w}.path"))  # type: ignore[arg-type]


def fact_item(f: FactHit, what: str) -> FactItem:
    """``f`` checked.

    Raises:
        DataError: A field has the wrong type, a number is NaN, ``confidence`` or
            ``strength`` is infinite, or ``since`` is outside years 1..9999.
    """
    _hashable(f.id, f"{what}.id")
    w = f"{what} ({f.id!r})"
    _hashable(f.subject, f"{w}.subject")
    _hashable(f.object, f"{w}.object", optional=True)
    _text(f.subject_name, f"{w}.subject_name")
    _text(f.predicate, f"{w}.predicate")
    _text(f.object_name, f"{w}.object_name", optional=True)
    _text(f.object_value, f"{w}.object_value", optional=True)
    _text(f.description, f"{w}.description", optional=True)
    confidence = _real(f.confidence, f"{w}.confidence")
    strength = _real(f.strength, f"{w}.strength", optional=True)
    for name, x in (("confidence", confidence), ("strength", strength)):
        if x is not None and math.isinf(x):
            raise DataError(f"{w}.{name} is infinite")
    since = _int(f.since, f"{w}.since")
    if since is not None and not _SINCE_MIN <= since <= _SINCE_MAX:
        raise DataError(f"{w}.since {since} is outside years 1..9999")
    return FactItem(
        f.id,
        f.subject,
        f.subject_name,
        f.predicate,
        f.object,
        f.object_name,
        f.object_value,
        confidence,  # type: ignore[arg-type]
        strength,
        f.description,
        since,
        _real(f.score, f"{w}.score"),  # type: ignore[arg-type]
        _int(f.hop, f"{w}.hop"),
        _path(f.path, f"{w}.path"),
    )


def chunk_item(c: ChunkHit, what: str) -> ChunkItem:
    """``c`` checked.

    Raises:
        DataError: A field has the wrong type, or ``score`` is NaN.
    """
    _hashable(c.id, f"{what}.id")
    w = f"{what} ({c.id!r})"
    _text(c.text, f"{w}.text")
    _text(c.source, f"{w}.source")
    score = _real(c.score, f"{w}.score")
    return ChunkItem(c.id, c.text, score, c.source, _path(c.path, f"{w}.path"))  # type: ignore[arg-type]


def checked_items(
    items: object, what: str, kind: type[Any], check: Callable[[Any, str], _T]
) -> list[_T]:
    """``items`` (hits of ``kind``), each checked by ``check``."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ParameterError(f"{what} must be a sequence of {kind.__name__}")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise ParameterError(
                f"{what}[{i}] must be a {kind.__name__}, got {type(item).__name__}"
            )
        out.append(check(item, f"{what}[{i}]"))
    return out


def check_unique(ids: Iterable[Hashable], what: str) -> None:
    seen: set[Hashable] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise DataError(f"{what}[{i}].id {x!r} is a duplicate")
        seen.add(x)


def clean(s: str) -> str:
    """Runs of whitespace (newlines too) as one space, no leading / trailing space."""
    return " ".join(s.split())


def object_text(f: FactItem) -> str:
    """The object as printed: its value, else the object entity's name, else "..." (seed
    000's placeholder). Empty or blank strings count as missing, as JavaScript's ``||``."""
    for s in (f.object_value, f.object_name):
        if s is not None and (c := clean(s)):
            return c
    return "..."
