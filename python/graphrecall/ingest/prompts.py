"""The prompts of :class:`~graphrecall.ingest.llm.OpenAIExtractor` and the reading of its
answers.

The prompts have the shape of HippoRAG's (OSU-NLP-Group/HippoRAG,
``src/hipporag/prompts/templates/ner.py`` and ``triple_extraction.py``): a system message,
a one-shot example (a user passage and the assistant's JSON answer), then the chunk. The
readers are tolerant: code fences and text around the JSON are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .protocol import Triple

__all__ = ["ner_messages", "openie_messages", "parse_entities", "parse_triples"]

Message = dict[str, str]

# ---------------------------------------------------------------------------- prompts

NER_SYSTEM = (
    "You extract the named entities of a paragraph. "
    'Answer with a JSON object {"named_entities": [...]} listing them as written.'
)

EXAMPLE_PASSAGE = """Lake Tahoe
Lake Tahoe is a freshwater lake in the Sierra Nevada, on the border of California and Nevada.
It formed about 2 million years ago.
Mark Twain described the lake in Roughing It, his book of 1872."""

EXAMPLE_NER = (
    '{"named_entities": ["Lake Tahoe", "Sierra Nevada", "California", "Nevada", '
    '"2 million years ago", "Mark Twain", "Roughing It", "1872"]}'
)

OPENIE_SYSTEM = (
    "You turn a paragraph and its named entities into an RDF graph. "
    'Answer with a JSON object {"triples": [["subject", "relation", "object"], ...]}.\n'
    "- Each triple names at least one, and preferably two, of the listed entities.\n"
    "- Replace pronouns with the names they stand for."
)

OPENIE_FRAME = """Turn this paragraph into a JSON object of triples, using its named entities.
Paragraph:
```
{passage}
```

{entities}"""

EXAMPLE_TRIPLES = """{"triples": [
    ["Lake Tahoe", "is", "freshwater lake"],
    ["Lake Tahoe", "located in", "Sierra Nevada"],
    ["Lake Tahoe", "on the border of", "California"],
    ["Lake Tahoe", "on the border of", "Nevada"],
    ["Lake Tahoe", "formed", "2 million years ago"],
    ["Mark Twain", "described", "Lake Tahoe"],
    ["Mark Twain", "wrote", "Roughing It"],
    ["Roughing It", "published in", "1872"]
]}"""


def ner_messages(passage: str) -> list[Message]:
    """The NER request's messages for ``passage``: system, one-shot example, passage."""
    return [
        {"role": "system", "content": NER_SYSTEM},
        {"role": "user", "content": EXAMPLE_PASSAGE},
        {"role": "assistant", "content": EXAMPLE_NER},
        {"role": "user", "content": passage},
    ]


def openie_messages(passage: str, entities: Sequence[str]) -> list[Message]:
    """The OpenIE request's messages for ``passage`` and its named ``entities``."""
    named = json.dumps({"named_entities": list(entities)}, ensure_ascii=False)
    return [
        {"role": "system", "content": OPENIE_SYSTEM},
        {
            "role": "user",
            "content": OPENIE_FRAME.format(passage=EXAMPLE_PASSAGE, entities=EXAMPLE_NER),
        },
        {"role": "assistant", "content": EXAMPLE_TRIPLES},
        {"role": "user", "content": OPENIE_FRAME.format(passage=passage, entities=named)},
    ]


# ---------------------------------------------------------------------------- parsing


def _json_object(content: str, key: str) -> Any:
    """The value of ``key`` in the first JSON object of ``content`` that has it (code fences
    and surrounding text ignored).

    Raises:
        ValueError: No such object; the message says what was wrong.
    """
    decoder = json.JSONDecoder()
    first_error = "no JSON object in it"
    start = content.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(content, start)
        except json.JSONDecodeError as exc:
            if start == content.find("{"):
                first_error = f"not valid JSON ({exc.msg} at character {exc.pos})"
        else:
            if isinstance(obj, dict) and key in obj:
                return obj[key]
            if start == content.find("{"):
                first_error = f"a JSON object without {key!r}"
        start = content.find("{", start + 1)
    raise ValueError(first_error)


def parse_entities(content: str) -> tuple[list[str], int]:
    """The named entities of a NER answer, and how many entries were dropped (not a
    non-empty string; repeats are dropped silently).

    Raises:
        ValueError: No JSON object with a ``named_entities`` list.
    """
    value = _json_object(content, "named_entities")
    if not isinstance(value, list):
        raise ValueError(f"'named_entities' is a {type(value).__name__}, not a list")
    out: dict[str, None] = {}
    dropped = 0
    for v in value:
        if isinstance(v, str) and v.strip():
            out.setdefault(" ".join(v.split()), None)
        else:
            dropped += 1
    return list(out), dropped


def parse_triples(content: str) -> tuple[list[Triple], int]:
    """The triples of an OpenIE answer, and how many entries were dropped (not a list of
    three non-empty strings).

    Raises:
        ValueError: No JSON object with a ``triples`` list.
    """
    value = _json_object(content, "triples")
    if not isinstance(value, list):
        raise ValueError(f"'triples' is a {type(value).__name__}, not a list")
    out: list[Triple] = []
    dropped = 0
    for t in value:
        if isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x.strip() for x in t):
            out.append((" ".join(t[0].split()), " ".join(t[1].split()), " ".join(t[2].split())))
        else:
            dropped += 1
    return out, dropped
