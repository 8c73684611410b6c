"""Anchors: where a query enters the graph.

Vector indexes over entity and chunk embeddings (:mod:`.vectors`), query entity recognition
by name and alias n-grams with a fuzzy fallback (:mod:`.names`, batched by :mod:`.fuzzy`),
and BM25 keyword search (:mod:`.keyword`). The text indexes share one tokenizer
(:mod:`.tokens`) and one tenant model (:mod:`.tenants`).
"""
