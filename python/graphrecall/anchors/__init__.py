"""Anchors: where a query enters the graph.

Vector indexes over entity and chunk embeddings (:mod:`.vectors`), query entity recognition
by name and alias n-grams with a fuzzy fallback (:mod:`.names`), and BM25 keyword search
(:mod:`.keyword`).
"""
