"""Writes the preset samples of this folder (run from the repository root:
``python tests/data/presets/make_samples.py``); each sample follows its tool's on-disk format
(see the README of each folder). The HippoRAG slice is copied from
``../shared/data/musique_train_hipporag`` (MIT / CC BY 4.0) when that file is present."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import networkx as nx
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
#: The shared evaluation data: beside the checkout, or beside the folder of worktrees.
HIPPO = next(
    (
        p / "shared/data/musique_train_hipporag"
        for p in Path(__file__).resolve().parents
        if (p / "shared/data/musique_train_hipporag").is_dir()
    ),
    Path("shared/data/musique_train_hipporag"),
)
HIPPO_FILE = "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"

# One small world, told in three passages.
TEXTS = [
    "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine.",
    "Charles Babbage designed the Analytical Engine, a mechanical general-purpose computer.",
    "Luigi Menabrea wrote a paper on the Analytical Engine that Ada Lovelace translated.",
]
ENTITIES = [  # title, type, description, passages
    ("ADA LOVELACE", "PERSON", "Mathematician who translated Menabrea's paper", [0, 2]),
    ("CHARLES BABBAGE", "PERSON", "Inventor of the Analytical Engine", [0, 1]),
    ("ANALYTICAL ENGINE", "EVENT", "A mechanical general-purpose computer", [0, 1, 2]),
    ("LUIGI MENABREA", "PERSON", "Italian engineer who wrote about the engine", [2]),
]
RELS = [  # source, target, description, weight, passages
    ("ADA LOVELACE", "ANALYTICAL ENGINE", "Ada Lovelace wrote an algorithm for it", 2.0, [0]),
    ("CHARLES BABBAGE", "ANALYTICAL ENGINE", "Charles Babbage designed it", 3.0, [1]),
    ("LUIGI MENABREA", "ANALYTICAL ENGINE", "Luigi Menabrea wrote a paper on it", 1.0, [2]),
    ("ADA LOVELACE", "LUIGI MENABREA", "Ada Lovelace translated Menabrea's paper", 2.0, [2]),
]


def _uuid(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def _sha512(text: str) -> str:
    return hashlib.sha512(text.encode()).hexdigest()


def graphrag() -> None:
    out = HERE / "graphrag"
    out.mkdir(exist_ok=True)
    lst = pa.list_(pa.string())
    unit = [_sha512(t) for t in TEXTS]
    doc = _sha512("babbage.txt")
    eid = {e[0]: _uuid(i + 1) for i, e in enumerate(ENTITIES)}
    rid = [_uuid(100 + i) for i in range(len(RELS))]
    degree = {t: sum(t in (r[0], r[1]) for r in RELS) for t, *_ in ENTITIES}
    pq.write_table(
        pa.table(
            {
                "id": pa.array([eid[e[0]] for e in ENTITIES]),
                "human_readable_id": pa.array(range(len(ENTITIES)), pa.int64()),
                "title": pa.array([e[0] for e in ENTITIES]),
                "type": pa.array([e[1] for e in ENTITIES]),
                "description": pa.array([e[2] for e in ENTITIES]),
                "text_unit_ids": pa.array([[unit[p] for p in e[3]] for e in ENTITIES], lst),
                "frequency": pa.array([len(e[3]) for e in ENTITIES], pa.int64()),
                "degree": pa.array([degree[e[0]] for e in ENTITIES], pa.int64()),
                "x": pa.array([0.0] * len(ENTITIES)),
                "y": pa.array([0.0] * len(ENTITIES)),
            }
        ),
        out / "entities.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array(rid),
                "human_readable_id": pa.array(range(len(RELS)), pa.int64()),
                "source": pa.array([r[0] for r in RELS]),
                "target": pa.array([r[1] for r in RELS]),
                "description": pa.array([r[2] for r in RELS]),
                "weight": pa.array([r[3] for r in RELS], pa.float64()),
                "combined_degree": pa.array(
                    [degree[r[0]] + degree[r[1]] for r in RELS], pa.int64()
                ),
                "text_unit_ids": pa.array([[unit[p] for p in r[4]] for r in RELS], lst),
            }
        ),
        out / "relationships.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array(unit),
                "human_readable_id": pa.array(range(1, len(TEXTS) + 1), pa.int64()),
                "text": pa.array(TEXTS),
                "n_tokens": pa.array([len(t.split()) for t in TEXTS], pa.int64()),
                "document_ids": pa.array([[doc]] * len(TEXTS), lst),
                "entity_ids": pa.array(
                    [[eid[e[0]] for e in ENTITIES if p in e[3]] for p in range(len(TEXTS))], lst
                ),
                "relationship_ids": pa.array(
                    [[rid[i] for i, r in enumerate(RELS) if p in r[4]] for p in range(len(TEXTS))],
                    lst,
                ),
                "covariate_ids": pa.array([[]] * len(TEXTS), lst),
            }
        ),
        out / "text_units.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array([_uuid(200), _uuid(201)]),
                "human_readable_id": pa.array([0, 1], pa.int64()),
                "community": pa.array([0, 1], pa.int64()),
                "level": pa.array([0, 0], pa.int64()),
                "parent": pa.array([-1, -1], pa.int64()),
                "children": pa.array([[], []], pa.list_(pa.int64())),
                "title": pa.array(["Community 0", "Community 1"]),
                "entity_ids": pa.array(
                    [[eid["ADA LOVELACE"], eid["LUIGI MENABREA"]], [eid["CHARLES BABBAGE"]]], lst
                ),
                "relationship_ids": pa.array([[rid[3]], [rid[1]]], lst),
                "text_unit_ids": pa.array([[unit[0], unit[2]], [unit[1]]], lst),
                "period": pa.array(["2025-01-01", "2025-01-01"]),
                "size": pa.array([2, 1], pa.int64()),
            }
        ),
        out / "communities.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array([doc]),
                "human_readable_id": pa.array([1], pa.int64()),
                "title": pa.array(["babbage.txt"]),
                "text": pa.array([" ".join(TEXTS)]),
                "text_unit_ids": pa.array([unit], lst),
                "creation_date": pa.array(["2025-01-01 00:00:00 +0000"]),
                "metadata": pa.array([None], pa.string()),
            }
        ),
        out / "documents.parquet",
    )


def hipporag() -> None:
    out = HERE / "hipporag"
    out.mkdir(exist_ok=True)
    src = HIPPO / HIPPO_FILE
    if src.is_file():
        raw = json.loads(src.read_text())
        docs = raw["docs"][:12]
        v1 = {**raw, "docs": docs}
        (out / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_12.json").write_text(
            json.dumps(v1)
        )
        v2docs = [
            {
                "idx": "chunk-" + hashlib.md5(d["passage"].encode()).hexdigest(),
                "passage": d["passage"],
                "extracted_entities": d["extracted_entities"],
                "extracted_triples": [t for t in d["extracted_triples"] if len(t) == 3],
            }
            for d in docs
        ]
        ents = [e for d in v2docs for e in d["extracted_entities"]]
        v2 = {
            "docs": v2docs,
            "avg_ent_chars": round(sum(len(e) for e in ents) / len(ents), 4),
            "avg_ent_words": round(sum(len(e.split()) for e in ents) / len(ents), 4),
        }
        (out / "v2").mkdir(exist_ok=True)
        (out / "v2" / "openie_results_ner_gpt-4o-mini.json").write_text(json.dumps(v2))


def lightrag() -> None:
    out = HERE / "lightrag"
    out.mkdir(exist_ok=True)
    doc = "doc-" + hashlib.md5(" ".join(TEXTS).encode()).hexdigest()
    cid = ["chunk-" + hashlib.md5(t.encode()).hexdigest() for t in TEXTS]
    g = nx.Graph()
    for title, typ, desc, ps in ENTITIES:
        name = title.title()
        g.add_node(
            name,
            entity_id=name,
            entity_type=typ.lower(),
            description=desc,
            source_id="<SEP>".join(cid[p] for p in ps),
            file_path="babbage.txt",
            created_at=1735689600,
        )
    for s, t, desc, w, ps in RELS:
        g.add_edge(
            s.title(),
            t.title(),
            weight=w,
            description=desc,
            keywords="design, invention" if "designed" in desc else "writing, mathematics",
            source_id="<SEP>".join(cid[p] for p in ps),
            file_path="babbage.txt",
            created_at=1735689600,
        )
    nx.write_graphml(g, out / "graph_chunk_entity_relation.graphml")
    chunks = {
        c: {
            "tokens": len(t.split()),
            "content": t,
            "chunk_order_index": i,
            "full_doc_id": doc,
            "file_path": "babbage.txt",
            "llm_cache_list": [],
            "create_time": 1735689600,
            "update_time": 1735689600,
            "_id": c,
        }
        for i, (c, t) in enumerate(zip(cid, TEXTS, strict=True))
    }
    docs = {
        doc: {
            "content": " ".join(TEXTS),
            "file_path": "babbage.txt",
            "create_time": 1735689600,
            "update_time": 1735689600,
            "_id": doc,
        }
    }
    for name, data in (("kv_store_text_chunks.json", chunks), ("kv_store_full_docs.json", docs)):
        (out / name).write_text(json.dumps(data, indent=2, ensure_ascii=False))


def graphml() -> None:
    out = HERE / "graphml"
    out.mkdir(exist_ok=True)
    g = nx.DiGraph()
    for i, (title, typ, desc, _) in enumerate(ENTITIES):
        g.add_node(f"n{i}", label=title.title(), type=typ.lower(), description=desc)
    ids = {e[0]: f"n{i}" for i, e in enumerate(ENTITIES)}
    for s, t, desc, w, _ in RELS:
        pred = desc.split()[2]
        g.add_edge(ids[s], ids[t], relation=pred, description=desc, weight=w)
    nx.write_graphml(g, out / "babbage.graphml")
    data = nx.node_link_data(g, edges="links")
    (out / "babbage.json").write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    graphrag()
    hipporag()
    lightrag()
    graphml()
