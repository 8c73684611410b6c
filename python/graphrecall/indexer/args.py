"""The ``graphrecall index`` command line: argument parsing and exit codes."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TextIO, get_args

from ..errors import GraphRecallError, ParameterError
from ..ingest.llm import API_KEY_ENV, DEFAULT_BASE_URL, OpenAIExtractor
from ..tables import BadDataError, LoadReport
from ..tables.mapping import PRESETS, ColumnMapping
from .output import TargetKind
from .pipeline import index
from .source import SourceKind

#: The output was written.
EXIT_OK = 0
#: The source or the output could not be used.
EXIT_FAILED = 1
#: Bad rows were refused (``--on-bad raise``); nothing was written.
EXIT_BAD_DATA = 2

_INT = re.compile(r"^[+-]?\d+$")


#: Above this share of a table's rows refused (most of it), skipping is not suggested: such
#: rows are more likely read wrongly (a column mapped to the wrong meaning) than bad.
SKIP_ADVICE_LIMIT = 0.5


def skip_advice(report: LoadReport) -> str:
    """What to do about refused rows: ``--on-bad skip`` only when it would drop a small
    share of every table, else the shares and a pointer to the mapping."""
    shares = [(t.table, t.refused, t.rows) for t in report.tables if t.refused and t.rows]
    worst = max((r / n for _, r, n in shares), default=0.0)
    said = ", ".join(f"{r:,} of {n:,} {table} rows ({100 * r / n:.0f} %)" for table, r, n in shares)
    if worst <= SKIP_ADVICE_LIMIT:
        return f"(pass --on-bad skip to drop {said} and the rows depending on them)"
    return (
        f"({said} are refused: too many to skip; check what the first errors say about "
        "the columns, and map them with --mapping)"
    )


def parse_tenant(text: str) -> int | str:
    """A tenant from the command line: an int when it is written as one, else the text."""
    return int(text) if _INT.match(text) else text


_MAPPING_KEYS = ("preset", "tables", "columns", "values", "optional")


def parse_mapping(text: str) -> ColumnMapping:
    """A :class:`ColumnMapping` from the command line: a preset name (``personal_kg`` ...), a
    JSON object, or a file holding one. The object has the fields of ``ColumnMapping``
    (``tables``, ``columns``, ``values``, ``optional``) and optionally ``preset``, a preset
    that the other fields then adapt.

    Raises:
        ParameterError: Not a preset, unreadable JSON, or an invalid mapping.
    """
    if text in PRESETS:
        return ColumnMapping.preset(text)
    raw = text
    if not text.lstrip().startswith(("{", "[")):
        path = Path(text)
        if not path.is_file():
            raise ParameterError(
                f"invalid parameter --mapping: {text!r} is neither a preset "
                f"({', '.join(sorted(PRESETS))}), a JSON object, nor a JSON file"
            )
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError(
                f"invalid parameter --mapping: cannot read {text!r} ({exc})"
            ) from None
    try:
        spec = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"invalid parameter --mapping: not valid JSON ({exc})") from None
    if not isinstance(spec, dict):
        raise ParameterError("invalid parameter --mapping: the JSON must be an object")
    unknown = [k for k in spec if k not in _MAPPING_KEYS]
    if unknown:
        raise ParameterError(
            f"invalid parameter --mapping: unknown key {unknown[0]!r}; "
            f"known: {list(_MAPPING_KEYS)!r}"
        )
    optional = spec.get("optional", [])
    if not isinstance(optional, list):
        raise ParameterError("invalid parameter --mapping: 'optional' must be a list")
    for key in ("tables", "columns", "values"):
        if not isinstance(spec.get(key, {}), dict):
            raise ParameterError(f"invalid parameter --mapping: {key!r} must be an object")
    if "preset" in spec:
        if not isinstance(spec["preset"], str):
            raise ParameterError("invalid parameter --mapping: 'preset' must be a name")
        return ColumnMapping.preset(spec["preset"]).merged(
            tables=spec.get("tables"),
            columns=spec.get("columns"),
            values=spec.get("values"),
            optional=optional,
        )
    return ColumnMapping(
        tables=spec.get("tables", {}),
        columns=spec.get("columns", {}),
        values=spec.get("values", {}),
        optional=frozenset(optional),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``index`` command's arguments to ``parser``."""
    parser.add_argument("source", help="a SQLite or DuckDB file, a Parquet directory, a URI")
    parser.add_argument("out", help="the snapshot directory or SQLite file to write")
    parser.add_argument(
        "--from",
        dest="source_kind",
        choices=get_args(SourceKind),
        help="what SOURCE is (default: told from the file, directory or URI); graphrag, "
        "hipporag, lightrag, graphml, neo4j read those tools' outputs (graphrecall.presets)",
    )
    parser.add_argument(
        "--to",
        dest="target",
        choices=get_args(TargetKind),
        default="snapshot",
        help="what to write (default: snapshot)",
    )
    parser.add_argument("--tenant", help="read only this tenant's rows (digits: an int tenant)")
    parser.add_argument(
        "--on-bad",
        dest="on_bad",
        choices=("raise", "skip"),
        default="raise",
        help="refuse bad rows (raise, the default: exit code 2) or drop them (skip)",
    )
    parser.add_argument(
        "--mapping",
        help=f"the source's names: a preset ({', '.join(sorted(PRESETS))}), a JSON object "
        "with tables / columns / values / optional (and preset), or a JSON file",
    )
    parser.add_argument(
        "--no-embedder",
        dest="no_embedder",
        action="store_true",
        help="--to index: use stored vectors only (texts without them get no vectors)",
    )
    parser.add_argument(
        "--embed-workers",
        dest="embed_workers",
        type=int,
        default=None,
        help="--to index: threads embedding texts (default: the core count)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace OUT if it is a snapshot or a graphrecall store",
    )
    llm = parser.add_argument_group(
        "LLM triples (--from text)", "add NER + OpenIE triples from an OpenAI-compatible endpoint"
    )
    llm.add_argument("--extractor", choices=("openai",), help="add an LLM extractor's triples")
    llm.add_argument("--llm-base-url", default=DEFAULT_BASE_URL, help="the API root (%(default)s)")
    llm.add_argument("--llm-model", default="gpt-4o-mini", help="the model (%(default)s)")
    llm.add_argument(
        "--llm-api-key-env", default=API_KEY_ENV, help="the API key's variable (%(default)s)"
    )
    llm.add_argument("--llm-cache", help="the response cache (default: ~/.cache/graphrecall/llm)")
    llm.add_argument("--llm-concurrency", type=int, default=8, help="requests at once (8)")


def run(
    args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``graphrecall index`` with parsed arguments; print the summary (stdout), the
    progress and any report or error (stderr).

    Returns:
        The exit code: :data:`EXIT_OK`, :data:`EXIT_FAILED` or :data:`EXIT_BAD_DATA`.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    extractor = None
    try:
        if getattr(args, "extractor", None) == "openai":
            extractor = OpenAIExtractor(
                args.llm_model,
                base_url=args.llm_base_url,
                api_key_env=args.llm_api_key_env,
                cache_dir=args.llm_cache,
                max_concurrency=args.llm_concurrency,
            )
        summary = index(
            args.source,
            args.out,
            source_kind=args.source_kind,
            target=args.target,
            tenant=None if args.tenant is None else parse_tenant(args.tenant),
            on_bad=args.on_bad,
            mapping=None if args.mapping is None else parse_mapping(args.mapping),
            overwrite=args.overwrite,
            progress=err,
            embedder=None if getattr(args, "no_embedder", False) else "default",
            embed_workers=getattr(args, "embed_workers", None),
            extractor=extractor,
        )
    except BadDataError as exc:
        print(
            f"graphrecall index: the source has bad rows; nothing was written\n{exc.report}\n"
            f"{skip_advice(exc.report)}",
            file=err,
        )
        return EXIT_BAD_DATA
    except (GraphRecallError, ImportError, OSError) as exc:
        print(f"graphrecall index: error: {exc}", file=err)
        return EXIT_FAILED
    finally:
        if extractor is not None:
            extractor.close()
    if not summary.report.ok:
        print(summary.report, file=err)
    print(summary, file=out)
    return EXIT_OK
