"""Linking speed: fuzzy top-3 over 1M names, dense search (FAISS Flat / HNSW), mention extraction.

Not a test: prints a table and writes ``benchmarks/results/linking.json``. Run from the repo root::

    python benchmarks/bench_linking.py                  # 1M names; dense 200k Flat, 100k HNSW
    python benchmarks/bench_linking.py --names 200000 --hnsw-n 30000   # quicker

Names: the 43k real entity names of MetaQA's WikiMovies KB (``../shared/data/metaqa``) plus
synthetic names made by recombining their words (2-4 words, word frequencies as in the KB), so
character trigram statistics are those of real names. Mentions: real KB names with one typo
(a deleted or swapped character), their first word(s) only, and whole names.

Fuzzy: per-mention latency of ``EntityLinker.link(mode="fuzzy", top_m=3)`` (trigram prefilter
+ coverage-weighted rapidfuzz rerank), the agreement of its top-1 with a full scan of the same
scorer over all names, and for reference one full-list ``rapidfuzz.process.extract`` with WRatio.
Dense: random unit 384-d vectors (search cost does not depend on what the vectors mean); FAISS
``IndexFlatIP`` below the HNSW threshold, ``IndexHNSWFlat`` (inner product) above; recall@1 of
HNSW against exact search. Plus one MiniLM query embedding, and LLM-free mention extraction on
MetaQA 1-hop questions (brackets removed) over the 43k-name KB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "metaqa"
sys.path.insert(0, str(ROOT / "shared"))

from machine_info import stamp

from kgrag.linking import EntityLinker, extract_mentions, name_key
from kgrag.linking.fuzzy import coverage_wratio


def kb_names() -> list[str]:
    names: dict[str, None] = {}
    with open(DATA / "kb_reconstructed.txt", encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("|")
            if len(parts) == 3:
                names.setdefault(parts[0])
                names.setdefault(parts[2])
    return list(names)


def synthetic_names(real: list[str], total: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    counts = Counter(w for n in real for w in n.split())
    words, weights = zip(*counts.items())
    out = dict.fromkeys(real)
    while len(out) < total:
        batch = rng.choices(words, weights=weights, k=4 * (total - len(out)) + 16)
        pos = 0
        while pos + 4 <= len(batch) and len(out) < total:
            k = rng.randint(2, 4)
            out.setdefault(" ".join(batch[pos:pos + k]))
            pos += k
    return list(out)


def typo(name: str, rng: random.Random) -> str:
    if len(name) < 5:
        return name
    i = rng.randrange(1, len(name) - 2)
    if rng.random() < 0.5:
        return name[:i] + name[i + 1:]
    return name[:i] + name[i + 1] + name[i] + name[i + 2:]


def percentiles(ms: list[float]) -> dict[str, float]:
    arr = np.asarray(ms)
    return {"median_ms": round(float(np.median(arr)), 3),
            "p95_ms": round(float(np.percentile(arr, 95)), 3),
            "mean_ms": round(float(arr.mean()), 3)}


def bench_fuzzy(names: list[str], real: list[str], n_mentions: int, n_full: int) -> dict:
    rng = random.Random(1)
    picks = [n for n in rng.sample(real, n_mentions * 3) if len(n) >= 6][:n_mentions]
    mentions = ([typo(n, rng) for n in picks[: n_mentions // 2]]
                + [" ".join(n.split()[:max(1, len(n.split()) - 1)]) for n in
                   picks[n_mentions // 2: 3 * n_mentions // 4]]
                + picks[3 * n_mentions // 4:])
    t0 = time.perf_counter()
    linker = EntityLinker(names, mode="fuzzy").build()
    build_s = time.perf_counter() - t0
    linker.link(mentions[0])  # warm-up
    times, top1 = [], []
    for m in mentions:
        t = time.perf_counter()
        links = linker.link(m, top_m=3)
        times.append((time.perf_counter() - t) * 1000)
        top1.append(links[0].name if links else None)
    typo_hits = sum(top1[i] == picks[i] for i in range(n_mentions // 2))
    # Agreement with an exhaustive scan of the same scorer (slow: 4 rapidfuzz scorers x N).
    keys = linker.fuzzy_index.keys
    lengths = linker.fuzzy_index.lengths
    agree, full_ms = 0, []
    for m in mentions[:n_full]:
        t = time.perf_counter()
        scores = coverage_wratio(name_key(m), keys, lengths)
        full_ms.append((time.perf_counter() - t) * 1000)
        best = float(scores.max())
        got = linker.link(m, top_m=1)[0]
        agree += int(got.score * 100 >= best - 1e-3)
    from rapidfuzz import fuzz, process, utils

    wr_ms = []
    for m in mentions[:5]:
        t = time.perf_counter()
        process.extract(utils.default_process(m), keys, scorer=fuzz.WRatio, processor=None,
                        limit=3)
        wr_ms.append((time.perf_counter() - t) * 1000)
    return {"names": len(names), "mentions": len(mentions), "build_s": round(build_s, 2),
            "link_top3": percentiles(times),
            "typo_top1_accuracy": round(typo_hits / (n_mentions // 2), 3),
            "top1_agrees_with_full_scan": f"{agree}/{n_full}",
            "full_scan_same_scorer": percentiles(full_ms),
            "rapidfuzz_extract_wratio_full_list": percentiles(wr_ms)}


def bench_dense(n: int, dim: int, hnsw_threshold: int, queries: int) -> dict:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, dim), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    names = [f"n{i}" for i in range(n)]
    qidx = rng.choice(n, queries, replace=False)
    q = vecs[qidx] + 0.3 * rng.standard_normal((queries, dim), dtype=np.float32) / np.sqrt(dim)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    out = {}
    for label, threshold in (("flat", 10**12), ("hnsw", hnsw_threshold)):
        if label == "hnsw" and n < hnsw_threshold:
            continue
        t0 = time.perf_counter()
        linker = EntityLinker(names, mode="dense", embeddings=vecs, hnsw_threshold=threshold)
        build = time.perf_counter() - t0
        index = linker.dense_index
        times, found = [], []
        for row in q:
            t = time.perf_counter()
            _, ids = index.search(row[None, :], 3)
            times.append((time.perf_counter() - t) * 1000)
            found.append(int(ids[0, 0]))
        out[label] = {"index": type(index.index).__name__, "vectors": n, "dim": dim,
                      "build_s": round(build, 2), "search_top3": percentiles(times),
                      "_top1": found}
    if "hnsw" in out:
        exact = np.asarray(out["flat"]["_top1"])
        out["hnsw"]["recall_at_1_vs_flat"] = round(float(
            (np.asarray(out["hnsw"]["_top1"]) == exact).mean()), 4)
    for v in out.values():
        v.pop("_top1")
    return out


def bench_minilm_query(repeats: int = 50) -> dict:
    from kgrag.embed import default_embedder

    emb = default_embedder()
    t0 = time.perf_counter()
    emb.embed_query("warm up")
    load = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        emb.embed_query(f"Tokyo Godfathers {i}")
        times.append((time.perf_counter() - t) * 1000)
    return {"load_s": round(load, 2), "embed_query": percentiles(times)}


def bench_mentions(real: list[str], questions: int) -> dict:
    lines = (DATA / "1-hop" / "test.txt").read_text(encoding="utf-8").splitlines()[:questions]
    t0 = time.perf_counter()
    linker = EntityLinker(real, mode="fuzzy")
    _ = linker._name_keys
    build = time.perf_counter() - t0
    times, hits = [], 0
    for line in lines:
        question = line.split("\t")[0]
        gold = question[question.index("[") + 1: question.index("]")]
        plain = question.replace("[", "").replace("]", "")
        t = time.perf_counter()
        mentions = extract_mentions(plain, linker)
        times.append((time.perf_counter() - t) * 1000)
        if any(gold in [link.name for link in m.links] for m in mentions):
            hits += 1
    return {"names": len(real), "questions": len(lines), "linker_build_s": round(build, 2),
            "gold_topic_entity_found": round(hits / len(lines), 4),
            "extract_mentions": percentiles(times)}


#: Sections of the markdown file from this heading on are written by other benchmarks
#: (embed_throughput.py, shared_index_build.py) and kept when this one rewrites its table.
KEEP_FROM = "\n## Embedding"


def write_markdown(path: Path, text: str) -> None:
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    kept = old[old.index(KEEP_FROM):] if KEEP_FROM in old else ""
    path.write_text(text.rstrip("\n") + "\n" + kept, encoding="utf-8")


def render_markdown(results: dict) -> str:
    """The results as the markdown table kept in ``docs/benchmarks-linking.md``."""
    f, m, q, d = results["fuzzy"], results["mentions"], results["minilm"], results["dense"]
    a = results["args"]
    rows = [
        ("fuzzy `link(top_m=3)`, %d names (trigram prefilter + rerank)" % f["names"],
         f["link_top3"]["median_ms"], f["link_top3"]["p95_ms"]),
        ("same scorer, exhaustive scan of %d names" % f["names"],
         f["full_scan_same_scorer"]["median_ms"], f["full_scan_same_scorer"]["p95_ms"]),
        ("rapidfuzz `process.extract` WRatio over %d names (reference-style)" % f["names"],
         f["rapidfuzz_extract_wratio_full_list"]["median_ms"],
         f["rapidfuzz_extract_wratio_full_list"]["p95_ms"]),
        ("`extract_mentions`, MetaQA 1-hop question, %d names" % m["names"],
         m["extract_mentions"]["median_ms"], m["extract_mentions"]["p95_ms"]),
        ("MiniLM `embed_query` (one mention)", q["embed_query"]["median_ms"],
         q["embed_query"]["p95_ms"]),
    ]
    for key, label in (("flat_large", "FAISS %s search top-3, %d x %d"),
                       ("flat_same_size_as_hnsw", "FAISS %s search top-3, %d x %d"),
                       ("hnsw", "FAISS %s search top-3, %d x %d")):
        r = d[key]
        rows.append((label % (r["index"], r["vectors"], r["dim"]), r["search_top3"]["median_ms"],
                     r["search_top3"]["p95_ms"]))
    lines = [
        "# Linking benchmarks",
        "",
        "Reproduce: `python benchmarks/bench_linking.py " + " ".join(
            f"--{k.replace('_', '-')} {v}" for k, v in a.items()
            if k not in ("out", "markdown", "render_only")) + "`",
        "(raw numbers: `benchmarks/results/linking.json`). Latencies per call, in ms.",
        f"Machine: {results['machine']}. Timings on a shared, oversubscribed 2-core machine are",
        "several times slower than on an idle one (compare the rapidfuzz row across runs).",
        "",
        "| operation | median ms | p95 ms |",
        "|---|---:|---:|",
        *[f"| {name} | {med} | {p95} |" for name, med, p95 in rows],
        "",
        f"- fuzzy index build for {f['names']} names: {f['build_s']} s; top-1 equals the "
        f"exhaustive scan's best score in {f['top1_agrees_with_full_scan']} checked mentions; "
        f"top-1 accuracy on one-typo mentions: {f['typo_top1_accuracy']}.",
        f"- mention extraction found the gold topic entity in "
        f"{m['gold_topic_entity_found']:.1%} of {m['questions']} MetaQA 1-hop questions "
        "(brackets removed).",
        f"- HNSW recall@1 against exact search: {d['hnsw'].get('recall_at_1_vs_flat')}; "
        f"HNSW build {d['hnsw']['build_s']} s for {d['hnsw']['vectors']} vectors.",
        f"- MiniLM load: {q['load_s']} s.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=1_000_000)
    parser.add_argument("--mentions", type=int, default=200)
    parser.add_argument("--full-scan-checks", type=int, default=10)
    parser.add_argument("--flat-n", type=int, default=199_999,
                        help="vectors for the exact index (largest size that stays Flat)")
    parser.add_argument("--hnsw-n", type=int, default=100_000,
                        help="vectors for the HNSW index (built with the threshold lowered)")
    parser.add_argument("--dense-dim", type=int, default=384)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "linking.json"))
    parser.add_argument("--markdown", default=str(ROOT / "docs" / "benchmarks-linking.md"))
    parser.add_argument("--render-only", action="store_true",
                        help="only rewrite the markdown table from the existing JSON")
    args = parser.parse_args()
    if args.render_only:
        results = json.loads(Path(args.out).read_text(encoding="utf-8"))
        write_markdown(Path(args.markdown), render_markdown(results))
        return

    real = kb_names()
    results: dict = {"machine": {"python": platform.python_version(),
                                 "processor": platform.processor() or platform.machine(),
                                 "cpus": os.cpu_count(),
                                 "loadavg_at_start": [round(x, 1) for x in os.getloadavg()]},
                     "args": vars(args)}
    t = time.perf_counter()
    names = synthetic_names(real, args.names)
    results["name_generation_s"] = round(time.perf_counter() - t, 2)
    print(f"{len(names)} names", flush=True)
    results["fuzzy"] = bench_fuzzy(names, real, args.mentions, args.full_scan_checks)
    print(json.dumps(results["fuzzy"], indent=1), flush=True)
    results["mentions"] = bench_mentions(real, args.questions)
    print(json.dumps(results["mentions"], indent=1), flush=True)
    results["minilm"] = bench_minilm_query()
    print(json.dumps(results["minilm"], indent=1), flush=True)
    large_flat = bench_dense(args.flat_n, args.dense_dim, 10**12, 200)
    both = bench_dense(args.hnsw_n, args.dense_dim, 1, 200)  # threshold 1: HNSW at any size
    results["dense"] = {"flat_large": large_flat["flat"], "flat_same_size_as_hnsw": both["flat"],
                        "hnsw": both["hnsw"]}
    print(json.dumps(results["dense"], indent=1), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(results), indent=2) + "\n", encoding="utf-8")
    Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    write_markdown(Path(args.markdown), render_markdown(results))
    print(f"wrote {args.out} and {args.markdown}")


if __name__ == "__main__":
    main()
