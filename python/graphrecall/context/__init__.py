"""Context blocks: the retrieved subgraph as text for an LLM, within a token budget.

The formatters read a result's hits (:class:`~graphrecall.recipes.EntityHit`,
:class:`~graphrecall.recipes.FactHit`, :class:`~graphrecall.recipes.ChunkHit`: the one item
model of retrieval results, which explanations read too), checking each one. Nothing here
knows the graph; it only reads what it is given.

Formats (one per source design that specifies one):

* :func:`narrative`: seed 000's ``constructNarrative``: facts grouped by subject under
  ``### 👤 USER CONTEXT`` / ``### 💡 CONTEXT: {name}`` headers, lines ``- {predicate}: {value}``.
* :func:`kg_context`: seed 003's "## Knowledge Graph Context" block (query
  entities, one section per entity with its relations and description, then the relevant
  relationships), ~500 tokens by default.
* :func:`known_facts`: seed 004's "## Known Facts" lines
  ``- {subject} {predicate} {object} (since YYYY-MM) [confidence: 0.95]``.
* :func:`json_block`: a JSON document for programs (entities, facts, chunks, scores, paths).

:func:`render` renders a whole :class:`~graphrecall.recipes.RetrievalResult` in one of
:data:`FORMATS`; :func:`budget_allocation` splits a context window the agent-memory way.

Modules: :mod:`.items` (checked hits, paths), :mod:`.tokens` (counters), :mod:`.packing`
(budget packing, :func:`~graphrecall.context.packing.pack_block` for formats of your own), one
module per format (:mod:`.by_subject`, :mod:`.graph_section`, :mod:`.fact_lines`,
:mod:`.json_doc`, :mod:`.paths`) and :mod:`.result` (a result in any format).

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

from .by_subject import narrative
from .fact_lines import budget_allocation, known_facts
from .graph_section import kg_context
from .items import PathStep
from .json_doc import json_block
from .packing import ContextBlock
from .paths import render_path
from .result import FORMATS, chunks_block, render, tiers_block
from .tokens import TokenCounter, e5_token_counter, whitespace_tokens

__all__ = [
    "FORMATS",
    "ContextBlock",
    "PathStep",
    "TokenCounter",
    "budget_allocation",
    "chunks_block",
    "e5_token_counter",
    "json_block",
    "kg_context",
    "known_facts",
    "narrative",
    "render",
    "render_path",
    "tiers_block",
    "whitespace_tokens",
]
