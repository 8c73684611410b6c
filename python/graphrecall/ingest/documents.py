"""Reading documents: plain text, Markdown, JSONL, Parquet and DataFrames into
:class:`Document` rows, with every bad input either a precise
:class:`~graphrecall.errors.DataError` (``on_bad="raise"``, the default) or a counted skip
(``on_bad="skip"``) recorded in a :class:`ReadReport`.

Bad inputs and their ``kind`` codes: ``empty`` (no text after stripping: always skipped and
counted, never an error), ``binary`` (a NUL byte in a file's first 8 KiB), ``invalid_utf8``
(the byte offset is in ``ctx["offset"]``; in a JSONL file only the lines that are not
UTF-8 are bad, with their line number in ``row``), ``invalid_json`` (a JSONL line; ``row`` is
its 1-based line number), ``too_large`` (more than ``max_chars`` characters),
``missing_column`` (no text column in a JSONL record, a Parquet file or a DataFrame; a
DataFrame given directly always raises), ``unreadable`` (a file the operating system refuses
to read) and ``invalid_value`` (a text that is not a string). Files and folders whose name
starts with a dot are not read and are counted as ``hidden`` (one entry for a hidden folder,
whatever it holds), never an error.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import DataError, ParameterError

OnBad = Literal["raise", "skip"]

#: Largest document accepted, in characters (about 10 MB of English text).
MAX_DOCUMENT_CHARS = 10_000_000

_TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown", ".rst", ""}
_JSONL_SUFFIXES = {".jsonl", ".ndjson"}
_PARQUET_SUFFIXES = {".parquet", ".pq"}


@dataclass(frozen=True)
class Document:
    """One document to ingest.

    Attributes:
        text: The text (non-empty after stripping).
        id: The document's id (a file's path, a JSONL line's ``path:line``, a record's
            ``id`` column); None = none, and the :class:`~graphrecall.ingest.Ingestor`
            numbers it in order of arrival (such documents are never duplicates).
        title: Its title, if any: the title becomes an entity whose primary chunk is the
            document's first chunk, and mentions of it elsewhere become directed edges.
        tenant: Its tenant (None = the default).
        metadata: Extra columns, stored as the chunks' ``metadata``.
    """

    text: str
    id: Hashable = None
    title: str | None = None
    tenant: Hashable | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass
class ReadReport:
    """What reading skipped: ``skipped[kind]`` lists ``(where, why)`` per skipped input."""

    read: int = 0
    skipped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def skip(self, kind: str, where: str, why: str) -> None:
        """Counts one skipped input of ``kind``."""
        self.skipped.setdefault(kind, []).append((where, why))

    @property
    def n_skipped(self) -> int:
        """How many inputs were skipped, all kinds together."""
        return sum(len(v) for v in self.skipped.values())


@dataclass(frozen=True)
class Columns:
    """Which columns of a JSONL record, Parquet file or DataFrame hold what.

    Attributes:
        text: The text column (required).
        title, id, tenant: Optional columns; absent ones are None for every row.
        metadata: Columns kept as metadata; None = every other column.
    """

    text: str = "text"
    title: str | None = "title"
    id: str | None = "id"
    tenant: str | None = "tenant"
    metadata: tuple[str, ...] | None = None


def _fail(on_bad: OnBad, report: ReadReport, err: DataError, where: str) -> None:
    if on_bad == "raise":
        raise err
    report.skip(err.kind or "invalid_value", where, str(err))


def _check_text(
    text: Any, where: str, row: int | None, max_chars: int, on_bad: OnBad, report: ReadReport
) -> str | None:
    """``text`` when usable; None when it was skipped (or raised under ``on_bad="raise"``)."""
    if text is None or (isinstance(text, float) and text != text):
        report.skip("empty", where, "no text")
        return None
    if not isinstance(text, str):
        _fail(
            on_bad,
            report,
            DataError(
                f"{where}: the text is a {type(text).__name__}, not a string",
                table="documents",
                row=row,
                column="text",
                kind="invalid_value",
                input=repr(text)[:80],
            ),
            where,
        )
        return None
    if len(text) > max_chars:
        _fail(
            on_bad,
            report,
            DataError(
                f"{where}: the document has {len(text):,} characters, more than max_chars="
                f"{max_chars:,}; split it or raise max_chars",
                table="documents",
                row=row,
                column="text",
                kind="too_large",
                ctx={"chars": len(text), "limit": max_chars},
            ),
            where,
        )
        return None
    if not text.strip():
        report.skip("empty", where, "blank text")
        return None
    return text


def _binary(data: bytes, where: str, on_bad: OnBad, report: ReadReport) -> bool:
    """True (after raising or counting it) when ``data`` is a binary file's bytes."""
    if b"\x00" not in data[:8192]:
        return False
    _fail(
        on_bad,
        report,
        DataError(
            f"{where}: a binary file (a NUL byte in its first 8 KiB), not text",
            table="documents",
            kind="binary",
            input=where,
        ),
        where,
    )
    return True


def _bad_utf8(
    exc: UnicodeDecodeError,
    data: bytes,
    where: str,
    row: int | None,
    on_bad: OnBad,
    report: ReadReport,
    base: int = 0,
) -> None:
    """Raises or counts a UTF-8 error at byte ``base + exc.start`` of a file."""
    _fail(
        on_bad,
        report,
        DataError(
            f"{where}: not UTF-8 at byte {base + exc.start} "
            f"({data[exc.start : exc.start + 4]!r}); re-encode the file as UTF-8",
            table="documents",
            row=row,
            kind="invalid_utf8",
            input=where,
            ctx={"offset": base + exc.start},
        ),
        where,
    )


def _decode(data: bytes, where: str, on_bad: OnBad, report: ReadReport) -> str | None:
    """The UTF-8 text of a file's bytes, or None when it is binary or not UTF-8 (skipped)."""
    if _binary(data, where, on_bad, report):
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        _bad_utf8(exc, data, where, None, on_bad, report)
        return None


def _from_record(
    rec: Mapping[str, Any],
    cols: Columns,
    where: str,
    row: int,
    default_id: Hashable,
    max_chars: int,
    on_bad: OnBad,
    report: ReadReport,
) -> Document | None:
    if cols.text not in rec:
        _fail(
            on_bad,
            report,
            DataError(
                f"{where}: no text column {cols.text!r} (columns: {sorted(map(str, rec))[:10]})",
                table="documents",
                row=row,
                column=cols.text,
                kind="missing_column",
            ),
            where,
        )
        return None
    text = _check_text(rec[cols.text], where, row, max_chars, on_bad, report)
    if text is None:
        return None

    def opt(name: str | None) -> Any:
        v = rec.get(name) if name else None
        return None if isinstance(v, float) and v != v else v

    named = {cols.text, cols.title, cols.id, cols.tenant}
    keys = cols.metadata if cols.metadata is not None else [k for k in rec if k not in named]
    meta = {k: rec[k] for k in keys if k in rec}
    title = opt(cols.title)
    rid = opt(cols.id)
    return Document(
        text=text,
        id=default_id if rid is None else rid,
        title=None if title is None else str(title),
        tenant=opt(cols.tenant),
        metadata=meta or None,
    )


def _jsonl_lines(
    path: Path, data: bytes, on_bad: OnBad, report: ReadReport
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a JSONL file's bytes, split at ``\\n`` only
    (a JSON string may hold U+2028 and other Unicode line breaks raw); a line that is not
    UTF-8 is bad on its own, the other lines are kept."""
    if _binary(data, str(path), on_bad, report):
        return
    base = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = data[base:].decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        for n, line in enumerate(text.split("\n"), start=1):
            yield n, line.rstrip("\r")
        return
    for n, raw in enumerate(data[base:].split(b"\n"), start=1):
        try:
            yield n, raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            _bad_utf8(exc, raw, f"{path}:{n}", n, on_bad, report, base)
        base += len(raw) + 1


def _jsonl(
    path: Path, data: bytes, cols: Columns, max_chars: int, on_bad: OnBad, report: ReadReport
) -> Iterator[Document]:
    for n, line in _jsonl_lines(path, data, on_bad, report):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            _fail(
                on_bad,
                report,
                DataError(
                    f"{where}: not JSON ({exc.msg} at column {exc.colno})",
                    table="documents",
                    row=n,
                    kind="invalid_json",
                    input=line[:80],
                ),
                where,
            )
            continue
        if not isinstance(rec, dict):
            _fail(
                on_bad,
                report,
                DataError(
                    f"{where}: a JSON {type(rec).__name__}, not an object with a "
                    f"{cols.text!r} field",
                    table="documents",
                    row=n,
                    kind="invalid_value",
                    input=line[:80],
                ),
                where,
            )
            continue
        doc = _from_record(rec, cols, where, n, f"{path}:{n}", max_chars, on_bad, report)
        if doc is not None:
            yield doc


def _frame(
    frame: Any,
    where: str,
    cols: Columns,
    max_chars: int,
    on_bad: OnBad,
    report: ReadReport,
    *,
    whole: bool = True,
) -> Iterator[Document]:
    """The rows of a DataFrame; without a text column that is an error (``whole``: the
    frame is the whole input) or, for one file among others, a skip under ``on_bad``."""
    names = [str(c) for c in frame.columns]
    if cols.text not in names:
        err = DataError(
            f"{where}: no text column {cols.text!r} (columns: {names[:10]}; "
            f"{len(frame):,} rows not read)",
            table="documents",
            column=cols.text,
            kind="missing_column",
            ctx={"rows": len(frame)},
        )
        if whole:
            raise err
        _fail(on_bad, report, err, where)
        return
    for i, rec in enumerate(frame.to_dict("records")):
        doc = _from_record(rec, cols, f"{where}[{i}]", i, None, max_chars, on_bad, report)
        if doc is not None:
            yield doc


def _file(
    path: Path, cols: Columns, max_chars: int, on_bad: OnBad, report: ReadReport
) -> Iterator[Document]:
    suffix = path.suffix.lower()
    where = str(path)
    try:
        if suffix in _PARQUET_SUFFIXES:
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            frame = pq.read_table(path).to_pandas()
        else:
            raw = path.read_bytes()
    except OSError as exc:
        _fail(
            on_bad,
            report,
            DataError(
                f"{where}: cannot be read ({exc.strerror or exc})",
                table="documents",
                kind="unreadable",
                input=where,
            ),
            where,
        )
        return
    if suffix in _PARQUET_SUFFIXES:
        yield from _frame(frame, where, cols, max_chars, on_bad, report, whole=False)
        return
    if suffix in _JSONL_SUFFIXES:
        yield from _jsonl(path, raw, cols, max_chars, on_bad, report)
        return
    data = _decode(raw, where, on_bad, report)
    if data is None:
        return
    text = _check_text(data, where, None, max_chars, on_bad, report)
    if text is None:
        return
    title = None
    if suffix in {".md", ".markdown"}:
        first = text.lstrip().split("\n", 1)[0]
        if first.startswith("# "):
            title = first[2:].strip() or None
    yield Document(text=text, id=where, title=title or path.stem)


def _folder(path: Path) -> Iterator[tuple[Path, bool]]:
    """``(path, hidden)`` of each file under ``path`` in sorted order; a hidden file or
    folder (a name starting with a dot) comes once, as itself, with ``hidden`` True."""
    hidden: set[Path] = set()
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).parts
        top = next((i for i, part in enumerate(rel) if part.startswith(".")), None)
        if top is not None:
            h = path.joinpath(*rel[: top + 1])
            if h not in hidden:
                hidden.add(h)
                yield h, True
        elif p.is_file() or (p.is_symlink() and not p.exists()):
            yield p, False  # a dangling link fails to read: counted, not lost


def read_documents(
    source: Any,
    *,
    columns: Columns | None = None,
    max_chars: int = MAX_DOCUMENT_CHARS,
    on_bad: OnBad = "raise",
    report: ReadReport | None = None,
) -> Iterator[Document]:
    """The documents of ``source``, lazily.

    Args:
        source: A path (file or directory, read recursively in sorted order, hidden files
            and folders counted and not read: ``.txt``, ``.md``, ``.rst``, extension-less
            and other files as one document each, a Markdown
            file's leading ``# `` line as its title; ``.jsonl`` / ``.ndjson`` one record a
            line; ``.parquet`` one row each), a pandas DataFrame, or an iterable of
            strings, :class:`Document` s, mappings (records) or paths.
        columns: Which record / table columns hold the text, title, id, tenant and metadata.
        max_chars: Largest document accepted (``too_large`` beyond).
        on_bad: ``"raise"`` a :class:`~graphrecall.errors.DataError` at the first bad input,
            or ``"skip"`` it and count it in ``report``.
        report: Collects the counts (a fresh one is used when None).

    Yields:
        One :class:`Document` per usable input; empty ones are skipped and counted.

    Raises:
        DataError: A bad input under ``on_bad="raise"``, or a table without its text column.
        ParameterError: A source of no kind read here.
    """
    if on_bad not in ("raise", "skip"):
        raise ParameterError(
            f"invalid parameter on_bad: {on_bad!r} (expected 'raise' or 'skip')",
            parameter="on_bad",
            kind="invalid_parameter",
        )
    cols = columns or Columns()
    rep = report if report is not None else ReadReport()
    for doc in _read(source, cols, max_chars, on_bad, rep):
        rep.read += 1
        yield doc


def _read(
    source: Any, cols: Columns, max_chars: int, on_bad: OnBad, rep: ReadReport
) -> Iterator[Document]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_dir():
            for p, hidden in _folder(path):
                if hidden:
                    kind = "folder" if p.is_dir() else "file"
                    rep.skip("hidden", str(p), f"a hidden {kind} (its name starts with a dot)")
                else:
                    yield from _file(p, cols, max_chars, on_bad, rep)
            return
        if not path.exists():
            raise ParameterError(
                f"invalid parameter source: no such file or directory {str(path)!r}",
                parameter="source",
                kind="invalid_parameter",
            )
        yield from _file(path, cols, max_chars, on_bad, rep)
        return
    if hasattr(source, "to_dict") and hasattr(source, "columns"):
        yield from _frame(source, "dataframe", cols, max_chars, on_bad, rep)
        return
    if not isinstance(source, Iterable):
        raise ParameterError(
            f"invalid parameter source: a {type(source).__name__}; expected a path, a "
            "DataFrame or an iterable of texts, Documents or records",
            parameter="source",
            kind="invalid_parameter",
        )
    for i, item in enumerate(source):
        where = f"documents[{i}]"
        if isinstance(item, Document):
            text = _check_text(item.text, where, i, max_chars, on_bad, rep)
            if text is not None:
                yield (
                    item
                    if item.id is not None
                    else Document(text, i, item.title, item.tenant, item.metadata)
                )
        elif isinstance(item, str):
            text = _check_text(item, where, i, max_chars, on_bad, rep)
            if text is not None:
                yield Document(text=text)
        elif isinstance(item, Path):
            yield from _file(item, cols, max_chars, on_bad, rep)
        elif isinstance(item, Mapping):
            doc = _from_record(item, cols, where, i, None, max_chars, on_bad, rep)
            if doc is not None:
                yield doc
        else:
            _fail(
                on_bad,
                rep,
                DataError(
                    f"{where}: a {type(item).__name__}; expected a str, Document, mapping or Path",
                    table="documents",
                    row=i,
                    kind="invalid_value",
                    input=repr(item)[:80],
                ),
                where,
            )
