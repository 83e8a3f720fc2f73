"""ByoKG-RAG LLM-free mode on MetaQA: how the walk-score rule decides the top-1 candidate.

The LLM-free retriever (:mod:`kgrag.methods.byokg.llm_free`) scores every 1..2-edge walk from the
linked question entities by the similarity of the masked question to the walk's relations, then
ranks the walks' end nodes. This benchmark re-ranks the same walks (same linking, same masked
question, same weighting by the start entity's link score, same tie rule: higher score, then
shorter walk, then first found) under alternative rules and relation renderings, to show which
rule wins which hop count:

* ``mean`` -- the shipped rule: mean of the per-relation cosines;
* ``centroid`` -- cosine between the question and the sum of the walk's relation vectors (a walk
  means the sum of its relations; a repeated relation scores like the relation alone);
* ``centred_centroid`` -- the same after subtracting the mean relation vector (removes what all
  relation names share, so an unrelated relation no longer adds to a walk);
* ``phrase`` -- cosine with the embedding of the walk's relation words joined in walk order
  ("directed by release year");
* ``padded_phrase`` -- the same with a 1-edge walk written at length 2 by repeating its
  relation ("directed by directed by"), so walks are compared at equal text length.

Top-1 hit rates (%, best-ranked end node is a gold answer) go to
``benchmarks/results/byokg_walk_scores.json``; ``words/mean`` and ``raw/mean`` reproduce the
``candidate_hits_at_1`` of ``byokg_metaqa_recall.py`` run with ``--relation-names words`` / ``raw``.

Relation renderings: ``words`` (``kgrag.text.names.relation_words``, the default), ``raw``
(identifiers as stored, the behaviour before commit a289e8c), ``raw+words`` (the normalised sum).

Usage (from the repo root; name embeddings are cached under ``benchmarks/.cache/``)::

    python benchmarks/byokg_walk_scores.py --limit 300
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag.graph import read_triples

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "metaqa"
CACHE = ROOT / "benchmarks" / ".cache" / "embeddings"
RESULTS = ROOT / "benchmarks" / "results" / "byokg_walk_scores.json"
sys.path.insert(0, str(ROOT / "shared"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

RULES = ("mean", "centroid", "centred_centroid", "phrase", "padded_phrase")


def walk_scores(rule: str, rels: np.ndarray, vectors: np.ndarray, qvec: np.ndarray,
                phrase_vectors: np.ndarray) -> np.ndarray:
    """Scores of walks given as a (walks, length) array of relation ids."""
    sims = vectors @ qvec
    if rule == "mean":
        return sims[rels].mean(1)
    if rule in ("centroid", "centred_centroid"):
        vecs = vectors - vectors.mean(0) if rule == "centred_centroid" else vectors
        gram = vecs @ vecs.T
        sq_norm = gram[rels[:, :, None], rels[:, None, :]].sum((1, 2))
        return (vecs @ qvec)[rels].sum(1) / np.sqrt(np.maximum(sq_norm, 1e-12))
    if rule in ("phrase", "padded_phrase"):
        if rels.shape[1] == 1:
            if rule == "padded_phrase":
                return phrase_vectors[rels[:, 0], rels[:, 0]] @ qvec
            return sims[rels[:, 0]]
        return phrase_vectors[rels[:, 0], rels[:, 1]] @ qvec
    raise ValueError(rule)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=300, help="questions per hop (seeded sample)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hops", default="1,2,3")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from kgrag.embed import CachedEmbedder, default_embedder
    from kgrag.eval.datasets import load_metaqa
    from kgrag.linking import extract_mentions
    from kgrag.methods.byokg import ByoKGRAG
    from kgrag.methods.byokg.llm_free import scored_walks
    from kgrag.text.names import relation_words

    kg = read_triples(DATA / "kb_reconstructed.txt", sep="|")
    embedder = CachedEmbedder(default_embedder(), CACHE, min_texts=500)
    base = ByoKGRAG(kg, embedder=embedder)
    scorer, linker = base.scorer, base.linker.build()
    names = list(kg.relation_names)
    words = [relation_words(r) for r in names]

    def unit(m: np.ndarray) -> np.ndarray:
        return m / np.linalg.norm(m, axis=-1, keepdims=True)

    raw = unit(np.asarray(embedder.embed_documents(names), np.float32))
    word_vecs = unit(np.asarray(embedder.embed_documents(words), np.float32))
    renderings = {"words": word_vecs, "raw": raw, "raw+words": unit(raw + word_vecs)}
    n = len(names)
    pairs = [f"{words[a]} {words[b]}" for a in range(n) for b in range(n)]
    phrases = unit(np.asarray(embedder.embed_documents(pairs), np.float32)).reshape(n, n, -1)
    combos = [("words", rule) for rule in RULES] + [("raw", "mean"), ("raw", "centroid"),
                                                     ("raw+words", "mean")]
    report = {"limit": args.limit, "seed": args.seed, "hops": {}}
    for hop in [int(h) for h in args.hops.split(",")]:
        t0 = time.perf_counter()
        examples = load_metaqa(DATA, hop, limit=args.limit, seed=args.seed)
        hits = {f"{r}/{rule}": 0 for r, rule in combos}
        for ex in examples:
            mentions = extract_mentions(ex.question, linker, top_m=1)
            link_score: dict[str, float] = {}
            for m in mentions:
                for link in m.links[:1]:
                    link_score[link.name] = max(link_score.get(link.name, 0.0), link.score)
            seeds = list(link_score)
            if not seeds:
                continue
            masked = ex.question
            for m in sorted(mentions, key=lambda m: -m.start):
                masked = masked[:m.start] + masked[m.end:]
            qvec = scorer.query_vector(masked if masked.strip() else ex.question)
            seed_ids = kg.node_ids(seeds)
            nodes_by_len, edges_by_len, _, _ = scored_walks(kg, seed_ids, np.zeros(n), hops=2)
            rels_by_len = [kg.rels[e].astype(np.int64) for e in edges_by_len]
            ends = np.concatenate([nodes[:, -1] for nodes in nodes_by_len])
            lengths = np.concatenate([np.full(len(nodes), length)
                                      for length, nodes in enumerate(nodes_by_len, start=1)])
            not_seed = ~np.isin(ends, seed_ids)
            weight_of = {int(kg.node_ids([name])[0]): w for name, w in link_score.items()}
            starts = np.concatenate([nodes[:, 0] for nodes in nodes_by_len])
            start_weight = np.fromiter((weight_of[int(x)] for x in starts), float, len(starts))
            for rendering, rule in combos:
                vectors = renderings[rendering]
                scores = np.concatenate([walk_scores(rule, rels, vectors, qvec, phrases)
                                         for rels in rels_by_len])
                scores = np.maximum(scores, 0.0) * start_weight
                order = np.lexsort((np.arange(len(scores)), lengths, -scores))
                order = order[not_seed[order]]
                if len(order) and kg.node_names[int(ends[order[0]])] in set(ex.answers):
                    hits[f"{rendering}/{rule}"] += 1
        row = {key: round(100 * h / len(examples), 1) for key, h in hits.items()}
        report["hops"][str(hop)] = row
        print(f"{hop}-hop ({time.perf_counter() - t0:.0f}s): {json.dumps(row)}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(stamp(report), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
