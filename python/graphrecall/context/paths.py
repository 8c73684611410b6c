"""Provenance paths as text: the one path renderer of context blocks and explanations."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ParameterError
from ..recipes.hits import Step
from .items import PathStep, as_steps, check_steps, clean

__all__ = ["render_path"]


def render_path(steps: Sequence[Step] | Sequence[PathStep]) -> str:
    """A provenance path as text: ``Ned Stark -ALLY-> Robert Baratheon -KING_OF-> ...``.

    The one path renderer (context blocks and explanations). Each step is a hit's
    :class:`~graphrecall.recipes.Step` or ``(entity_name, predicate, direction)`` (or seed
    001's ``(entity, relationship_type)``, meaning "out"): ``-pred->`` when the entity is the
    fact's subject,
    ``<-pred-`` when it is the object. A last step with a predicate leads to an endpoint the
    path does not name, printed ``...`` (seed 001's ``[("Ned Stark", "ALLY"), ("Robert
    Baratheon", "KING_OF")]``); a last step without one ends on its entity.

    Args:
        steps: The steps, from the anchor on.

    Returns:
        The path ("" for no steps).

    Raises:
        ParameterError: A step is malformed, or a step other than the last has no predicate.
    """
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise ParameterError("steps must be a sequence of (name, predicate, direction) tuples")
    checked = check_steps(as_steps(steps), "steps", ParameterError)
    parts: list[str] = []
    for name, pred, direction in checked:
        parts.append(clean(name))
        if pred is not None:
            p = clean(pred)
            parts.append(f"-{p}->" if direction == "out" else f"<-{p}-")
    if checked and checked[-1][1] is not None:
        parts.append("...")
    return " ".join(parts)
