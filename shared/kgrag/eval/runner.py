"""The evaluation runner behind ``kgrag eval``: one method on one dataset in one mode.

:func:`evaluate` samples ``limit`` questions (seeded), runs them one by one and appends one JSON
line per question to ``<out_dir>/<method>__<dataset>__<mode>.jsonl`` (flushed after every line),
then writes the summary ``<...>.json``. A rerun skips the question ids already in the JSONL, so
an interrupted run resumes where it stopped; a half-written last line (killed mid-write) is cut
off before appending. A run with constructor ``params`` (``--param``) or a ``k`` other than 10
writes ``<method>__<dataset>__<mode>__p<hash>.jsonl`` instead (:func:`run_stem`: a hash of the
parameters' ``repr`` and ``k``), so runs with different parameters in one ``out_dir`` never
share records; within a file records are keyed by question id (a question's record does not
depend on ``limit`` / ``seed``). A different LLM or embedder is not part of the key: use
another ``out_dir``.

Per question (see :func:`score`): Hits@1, Hits@k and MRR when the method ranks answer
candidates; answer recall of the retrieved context always (entity names, or the context text for
text methods); exact match and token F1 when the method wrote an answer (``llm`` mode); LLM
calls, tokens and latency.

Which method runs on which dataset is :data:`METHOD_DATASETS`; :data:`DATASETS` says where each
dataset lives under ``data_root`` (default: ``$KGRAG_DATA``, else ``../shared/data`` from the
current folder or beside the checkout; see :func:`default_data_root`).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.eval.datasets import QAExample, load_metaqa, load_pathquestion
from kgrag.eval.harness import MODES, Outcome, build_question_runner
from kgrag.eval.metrics import answer_recall, exact_match, hits_at_k, reciprocal_rank, token_f1
from kgrag.llm.steps import record_replies
from kgrag.methods.registry import KG_DATASETS as KG_DATASETS
from kgrag.methods.registry import TEXT_DATASETS as TEXT_DATASETS


@dataclass(frozen=True)
class DatasetSpec:
    """Where a dataset's questions and its graph (or corpus) are, relative to ``data_root``."""

    name: str
    kind: str  # "kg" or "text"
    load_examples: Callable[[Path, int | None, int], list[QAExample]]
    resource_key: str
    load_resource: Callable[[Path], Any]


def _metaqa_graph(root: Path) -> Any:
    from kgrag.graph.conversions import read_triples

    return read_triples(root / "metaqa" / "kb_reconstructed.txt", sep="|", header=False)


def _pq_graph(kb: str) -> Callable[[Path], Any]:
    def load(root: Path) -> Any:
        from kgrag.graph.conversions import read_triples

        return read_triples(root / "pathquestion" / kb, sep="\t", header=False)
    return load


def _metaqa(hop: int) -> Callable[[Path, int | None, int], list[QAExample]]:
    return lambda root, limit, seed: load_metaqa(root / "metaqa", hop, limit=limit, seed=seed)


def _pq(file: str) -> Callable[[Path, int | None, int], list[QAExample]]:
    return lambda root, limit, seed: load_pathquestion(root / "pathquestion" / file, limit=limit,
                                                       seed=seed)


def _musique_examples(root: Path, limit: int | None, seed: int) -> list[QAExample]:
    from kgrag.eval.corpora import load_musique

    return load_musique(root / "musique", limit=limit, seed=seed).examples


def _musique_passages(root: Path) -> list[str]:
    from kgrag.eval.corpora import load_musique

    return load_musique(root / "musique").passages


def _hotpot_examples(root: Path, limit: int | None, seed: int) -> list[QAExample]:
    from kgrag.eval.corpora import load_hotpotqa

    return load_hotpotqa(root / "hotpotqa", limit=limit, seed=seed).examples


def _hotpot_passages(root: Path) -> list[str]:
    from kgrag.eval.corpora import load_hotpotqa

    return load_hotpotqa(root / "hotpotqa").passages


DATASETS: dict[str, DatasetSpec] = {
    **{f"metaqa-{h}hop": DatasetSpec(f"metaqa-{h}hop", "kg", _metaqa(h), "metaqa", _metaqa_graph)
       for h in (1, 2, 3)},
    "pq-2h": DatasetSpec("pq-2h", "kg", _pq("PQ-2H.txt"), "pq-2h", _pq_graph("2H-kb.txt")),
    "pq-3h": DatasetSpec("pq-3h", "kg", _pq("PQ-3H.txt"), "pq-3h", _pq_graph("3H-kb.txt")),
    "musique": DatasetSpec("musique", "text", _musique_examples, "musique", _musique_passages),
    "hotpotqa": DatasetSpec("hotpotqa", "text", _hotpot_examples, "hotpotqa", _hotpot_passages),
}

class _MethodTable(Mapping[str, Any]):
    """A read-only view of the method registry (:mod:`kgrag.methods.registry`), so a method
    registered after import is evaluated like the built-in ones."""

    def __init__(self, value: Callable[[Any], Any]) -> None:
        self._value = value

    def __getitem__(self, name: str) -> Any:
        from kgrag.methods.registry import METHODS

        return self._value(METHODS[name])

    def __iter__(self) -> Iterator[str]:
        from kgrag.methods.registry import METHODS

        return iter(list(METHODS))

    def __len__(self) -> int:
        from kgrag.methods.registry import METHODS

        return len(METHODS)


#: method -> (datasets it applies to, modes it has), from the registry
METHOD_DATASETS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = _MethodTable(
    lambda spec: (spec.datasets, spec.eval_modes))

#: what each method reads: a knowledge graph ("kg") or a text corpus ("text"), from the registry
METHOD_KINDS: Mapping[str, str] = _MethodTable(lambda spec: spec.kind)


def user_dataset(questions: str | os.PathLike[str], *, graph: str | os.PathLike[str] | None = None,
                 documents: str | os.PathLike[str] | None = None, name: str | None = None,
                 relation_labels: str | os.PathLike[str] | None = None) -> DatasetSpec:
    """A dataset from your own files: a JSONL of ``{"question", "answers", "entities"?, "id"?}``
    (:func:`~kgrag.eval.datasets.load_jsonl`) plus either ``graph`` (a triples file or a saved
    graph directory, for the KG methods) or ``documents`` (a text file, one passage per line,
    for KET-RAG). Questions with a gold ``path`` (or several ``paths`` meeting at the answer)
    run in the oracle mode too; questions without one only in the llm-free and llm modes.
    ``relation_labels``: a label file for the graph's relations (Wikidata-style ids).
    """
    from kgrag.eval.datasets import load_jsonl

    if (graph is None) == (documents is None):
        raise ValueError("give exactly one of graph= (KG methods) or documents= (KET-RAG)")
    qpath = Path(questions)
    label = name or f"custom-{qpath.stem}"

    def load_examples(root: Path, limit: int | None, seed: int) -> list[QAExample]:
        return load_jsonl(qpath, limit=limit, seed=seed)

    if graph is not None:
        def load_graph(root: Path) -> Any:
            from kgrag.graph.files import open_graph

            return open_graph(str(graph), relation_labels=str(relation_labels)
                              if relation_labels else None)
        key = f"graph:{Path(graph).resolve()}" + (
            f"+labels:{Path(relation_labels).resolve()}" if relation_labels else "")
        return DatasetSpec(label, "kg", load_examples, key, load_graph)

    assert documents is not None  # exactly one of graph / documents (checked above)
    docs_path = Path(documents)

    def load_documents(root: Path) -> list[str]:
        text = docs_path.read_text(encoding="utf-8")
        return [line.strip() for line in text.splitlines() if line.strip()]
    return DatasetSpec(label, "text", load_examples, f"docs:{docs_path.resolve()}",
                       load_documents)


def applicable(method: str, dataset: str, mode: str) -> bool:
    datasets, modes = METHOD_DATASETS.get(method, ((), ()))
    return dataset in datasets and mode in modes


def check_applicable(method: str, dataset: str, mode: str) -> None:
    if method not in METHOD_DATASETS:
        raise ValueError(f"unknown method {method!r} (one of {', '.join(METHOD_DATASETS)})")
    if dataset not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r} (one of {', '.join(DATASETS)})")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    datasets, modes = METHOD_DATASETS[method]
    if dataset not in datasets:
        raise ValueError(f"{method} does not apply to {dataset} (it runs on {', '.join(datasets)})")
    if mode not in modes:
        raise ValueError(f"{method} has no {mode} mode (modes: {', '.join(modes)})")


def data_root_candidates() -> list[tuple[str, Path]]:
    """Where :func:`default_data_root` looks, in order, each with the rule that names it."""
    if os.environ.get("KGRAG_DATA"):
        return [("$KGRAG_DATA", Path(os.environ["KGRAG_DATA"]).expanduser())]
    checkout = Path(__file__).resolve().parents[3]  # <checkout>/shared/kgrag/eval/runner.py
    return [("./../shared/data from the current folder", Path("../shared/data")),
            ("../shared/data beside the kgrag checkout", checkout.parent / "shared" / "data")]


def default_data_root() -> Path:
    """The datasets folder: ``$KGRAG_DATA``, else ``../shared/data`` (from the current folder,
    then beside the checkout kgrag is installed from). Raises :class:`FileNotFoundError`
    listing every place it looked, and how to point it elsewhere, when none exists."""
    candidates = data_root_candidates()
    for _, path in candidates:
        if path.is_dir():
            return path
    looked = "; ".join(f"{path} ({rule})" for rule, path in candidates)
    raise FileNotFoundError(
        f"no datasets folder found (looked in: {looked}); pass --data-root DIR or set "
        f"KGRAG_DATA=DIR to the folder holding metaqa/, pathquestion/, musique/, hotpotqa/")


def _check_data_root(root: Path) -> Path:
    if not root.is_dir():
        raise FileNotFoundError(f"datasets folder {root} (--data-root / data_root=) does not exist")
    return root


#: graphs / corpora loaded in this process, by (data_root, resource key)
_RESOURCES: dict[tuple[str, str], Any] = {}


def load_resource(spec: DatasetSpec, data_root: Path) -> Any:
    key = (str(Path(data_root).resolve()), spec.resource_key)
    if key not in _RESOURCES:
        if len(_RESOURCES) >= 3:
            _RESOURCES.clear()
        _RESOURCES[key] = spec.load_resource(Path(data_root))
    return _RESOURCES[key]


# ---------------------------------------------------------------------- scoring
def score(outcome: Outcome, gold: tuple[str, ...], k: int = 10) -> dict[str, float]:
    """Per-question metrics (fractions in [0, 1]); absent keys = not applicable."""
    metrics: dict[str, float] = {}
    if outcome.rank_metrics is not None:
        metrics["hits@1"] = float(outcome.rank_metrics["hits@1"])
        metrics[f"hits@{k}"] = float(outcome.rank_metrics.get(f"hits@{k}", 0.0))
        metrics["mrr"] = float(outcome.rank_metrics["mrr"])
    elif outcome.ranked is not None:
        metrics["hits@1"] = hits_at_k(outcome.ranked, gold, 1)
        metrics[f"hits@{k}"] = hits_at_k(outcome.ranked, gold, k)
        metrics["mrr"] = reciprocal_rank(outcome.ranked, gold)
    if outcome.context_names is not None:
        metrics["answer_recall"] = answer_recall(outcome.context_names, gold)
    elif outcome.context_text is not None:
        metrics["answer_recall"] = answer_recall(outcome.context_text, gold)
    if outcome.answer_text is not None:
        candidates = [outcome.answer_text, *(outcome.ranked or [])]
        metrics["em"] = max(exact_match(c, gold) for c in candidates)
        metrics["f1"] = token_f1(outcome.answer_text, gold)
    return metrics


def record(ex: QAExample, outcome: Outcome, metrics: dict[str, float], top: int = 10) -> dict:
    return {
        "id": ex.id, "question": ex.question, "qtype": ex.qtype, "gold": list(ex.answers),
        "ranked": (outcome.ranked or [])[:top] if outcome.ranked is not None else None,
        "answer": outcome.answer_text,
        "context_items": outcome.items, "context_chars": outcome.context_chars,
        "metrics": {key: round(v, 6) for key, v in metrics.items()},
        "llm": outcome.usage.as_dict(),
        "latency_ms": round(1000 * outcome.seconds, 3),
        **({"extra": outcome.extra} if outcome.extra else {}),
    }


# ---------------------------------------------------------------------- JSONL
def read_records(path: Path) -> list[dict]:
    """Complete records of a JSONL file; a torn last line is cut off the file."""
    if not path.exists():
        return []
    records: list[dict] = []
    good_bytes = 0
    with path.open("rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break  # written partly when the run was killed
            try:
                records.append(json.loads(raw))
            except json.JSONDecodeError:
                break
            good_bytes += len(raw)
    if good_bytes < path.stat().st_size:
        with path.open("r+b") as fh:
            fh.truncate(good_bytes)
    return records


#: the characters of each raw LLM reply kept in a record (``extra["replies"]``)
REPLY_CHARS = 2000


def step_stats(records: list[dict]) -> dict[str, dict[str, Any]]:
    """Per LLM step, over the records' kept replies: calls, replies judged by the step's
    parser, how many it could not use, and that rate in percent (``None`` for a step whose
    replies are not judged: one that parses leniently, never refusing a reply)."""
    stats: dict[str, dict[str, Any]] = {}
    for rec in records:
        for reply in (rec.get("extra") or {}).get("replies", ()):
            entry = stats.setdefault(reply["step"] or "(unnamed)",
                                     {"calls": 0, "judged": 0, "unusable": 0})
            entry["calls"] += 1
            if reply.get("usable") is not None:
                entry["judged"] += 1
                entry["unusable"] += not reply["usable"]
    for entry in stats.values():
        entry["unusable_rate"] = (round(100 * entry["unusable"] / entry["judged"], 2)
                                  if entry["judged"] else None)
    return stats


def summarize(records: list[dict], *, k: int = 10) -> dict[str, Any]:
    """Means over questions: metrics in percent, cost and latency per question."""
    keys = ["hits@1", f"hits@{k}", "mrr", "answer_recall", "em", "f1"]
    metrics = {}
    for key in keys:
        values = [r["metrics"][key] for r in records if key in r["metrics"]]
        if values:
            metrics[key] = round(100 * statistics.fmean(values), 2)
    lat = [r["latency_ms"] for r in records]
    calls = [r["llm"]["calls"] for r in records]
    tokens = [r["llm"]["total_tokens"] for r in records]
    return {
        "evaluated": len(records),
        "metrics": metrics,
        "full_recall": round(100 * statistics.fmean(
            r["metrics"].get("answer_recall", 0.0) == 1.0 for r in records),
                             2) if records else None,
        "llm_calls_per_question": round(statistics.fmean(calls), 3) if calls else 0.0,
        "tokens_per_question": round(statistics.fmean(tokens), 1) if tokens else 0.0,
        "latency_ms_mean": round(statistics.fmean(lat), 2) if lat else None,
        "latency_ms_median": round(statistics.median(lat), 2) if lat else None,
        "context_items_mean": round(statistics.fmean(r["context_items"] for r in records), 1)
        if records else None,
        "context_chars_mean": round(statistics.fmean(r["context_chars"] for r in records), 1)
        if records else None,
        **({"llm_steps": steps} if (steps := step_stats(records)) else {}),
        "unusable_questions": sum(1 for r in records
                                  if (r.get("extra") or {}).get("unusable_reply")),
        # answers replaced by the retrieval's best candidate (on_unusable_reply="fallback")
        "answer_fallbacks": sum(1 for r in records
                                if (r.get("extra") or {}).get("answer_fallback")),
    }


TABLE_HEADER = ("| method | dataset | mode | n | Hits@1 | Hits@{k} | MRR | answer recall | "
                "EM | F1 | "
                "LLM calls/q | latency ms (median) "
                "|\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def markdown_row(summary: dict[str, Any], k: int = 10) -> str:
    m = summary["metrics"]

    def cell(key: str) -> str:
        return f"{m[key]:.1f}" if key in m else "–"
    return (f"| {summary['method']} | {summary['dataset']} | {summary['mode']} | "
            f"{summary['evaluated']} | {cell('hits@1')} | {cell(f'hits@{k}')} | {cell('mrr')} | "
            f"{cell('answer_recall')} | {cell('em')} | {cell('f1')} | "
            f"{summary['llm_calls_per_question']:g} | {summary['latency_ms_median']} |")


def markdown_table(summaries: list[dict[str, Any]], k: int = 10) -> str:
    return "\n".join([TABLE_HEADER.format(k=k), *(markdown_row(s, k) for s in summaries)])


# ---------------------------------------------------------------------- evaluate
DEFAULT_K = 10


def run_stem(method_name: str, dataset_name: str, mode: str, params: Mapping[str, Any] | None,
             k: int = DEFAULT_K) -> str:
    """The file stem of a run's records and summary: ``<method>__<dataset>__<mode>``, plus
    ``__p<10 hex digits>`` (a hash of the parameters' ``repr`` and ``k``) when the run has
    parameters or a non-default ``k`` -- so a rerun resumes only from records made with the
    same parameters.

    >>> run_stem("ultrag", "pq-2h", "oracle", None)
    'ultrag__pq-2h__oracle'
    >>> run_stem("ultrag", "pq-2h", "oracle", {"executor": "symbolic"}) != run_stem(
    ...     "ultrag", "pq-2h", "oracle", {"executor": "neural"})
    True
    """
    stem = f"{method_name}__{dataset_name}__{mode}"
    if not params and k == DEFAULT_K:
        return stem
    key = json.dumps({"params": {name: repr(value) for name, value in (params or {}).items()},
                      "k": k}, sort_keys=True, ensure_ascii=True)
    return f"{stem}__p{hashlib.sha1(key.encode('ascii')).hexdigest()[:10]}"


def _method_params(mode: str, params: dict | None) -> dict:
    """The constructor parameters of a run: ``params``, and in ``llm`` mode
    ``on_unusable_reply="empty"`` unless given (not part of the run's key: the default)."""
    if mode == "llm":
        return {"on_unusable_reply": "empty", **(params or {})}
    return dict(params or {})


def evaluate(method_name: str, dataset_name: str | DatasetSpec, *, mode: str = "oracle",
             llm: Any = None,
             limit: int | None = 500, seed: int = 0, out_dir: str | os.PathLike[str] = "eval-out",
             data_root: str | os.PathLike[str] | None = None, embedder: Any = None,
             cache_dir: str | os.PathLike[str] | None = None, params: dict | None = None,
             k: int = DEFAULT_K, progress: bool = True) -> dict[str, Any]:
    """Run ``method_name`` on a seeded sample of ``dataset_name``; write JSONL + summary JSON.

    Returns the summary (also written to ``<out_dir>/<stem>.json``, :func:`run_stem`:
    ``<method>__<dataset>__<mode>`` without parameters, with its markdown table row under
    ``"markdown_row"``). ``embedder``: any embedder (``None`` =
    packaged MiniLM); ``cache_dir`` keeps its name embeddings on disk. ``params`` go to the
    method's constructor (KET-RAG: index or retrieval parameters). In ``llm`` mode an unusable
    LLM reply scores the question as a miss (``on_unusable_reply="empty"``, its reason in the
    record's answer text) instead of stopping the run, unless ``params`` say otherwise.
    """
    own_files = isinstance(dataset_name, DatasetSpec)
    if isinstance(dataset_name, DatasetSpec):  # your own data (see user_dataset)
        spec = dataset_name
        if method_name not in METHOD_KINDS or mode not in METHOD_DATASETS[method_name][1]:
            raise ValueError(f"unknown method {method_name!r} or mode {mode!r}")
        if METHOD_KINDS[method_name] != spec.kind:
            raise ValueError(f"{method_name} needs a {METHOD_KINDS[method_name]} dataset; "
                             f"{spec.name} is a {spec.kind} dataset")
        dataset_name = spec.name
    else:
        check_applicable(method_name, dataset_name, mode)
        spec = DATASETS[dataset_name]
    if data_root is not None:
        root = _check_data_root(Path(data_root))
    elif own_files:  # your own files (user_dataset) carry their own paths: no datasets folder
        root = Path.cwd()
    else:
        root = default_data_root()
    random.seed(seed)
    np.random.seed(seed)
    examples = spec.load_examples(root, limit, seed)
    if mode == "oracle" and any(not (ex.relation_path and ex.entities) for ex in examples):
        raise ValueError(f"the oracle mode needs gold topic entities and relation paths, which "
                         f"{spec.name} does not have; use llm-free or llm")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = run_stem(method_name, dataset_name, mode, params, k)
    jsonl = out / f"{stem}.jsonl"
    done = {r["id"] for r in read_records(jsonl)}
    todo = [ex for ex in examples if ex.id not in done]

    setup_seconds = 0.0
    if todo:
        from kgrag.eval.embedding import EvalEmbedder

        started = time.perf_counter()
        resource = load_resource(spec, root)
        emb = EvalEmbedder(embedder, cache_dir)
        run_one = build_question_runner(method_name, mode, resource, llm=llm, embedder=emb,
                                        params=_method_params(mode, params), k=k)
        setup_seconds = time.perf_counter() - started
        bar = _progress(todo, f"{method_name} {dataset_name} {mode}", progress)
        with jsonl.open("a", encoding="utf-8") as fh:
            for ex in bar:
                with record_replies() as replies:
                    outcome = run_one(ex, ex.question)
                if replies:  # llm mode: each step's replies and whether the step could use them
                    outcome.extra = {**outcome.extra, "replies": [
                        {"step": r.step, "usable": r.usable, "error": r.error[:200],
                         "reply": r.reply[:REPLY_CHARS]} for r in replies]}
                line = record(ex, outcome, score(outcome, ex.answers, k))
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                fh.flush()

    wanted = {ex.id for ex in examples}
    records = [r for r in read_records(jsonl) if r["id"] in wanted]
    summary = {
        "method": method_name, "dataset": dataset_name, "mode": mode,
        "limit": limit, "seed": seed, "questions": len(examples), "k": k,
        **summarize(records, k=k),
        "params": {key: repr(v) for key, v in (params or {}).items()},
        "setup_seconds_last_run": round(setup_seconds, 1),
        "jsonl": str(jsonl),
    }
    summary["markdown_row"] = markdown_row(summary, k)
    (out / f"{stem}.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                                      encoding="utf-8")
    return summary


def _progress(items: list, desc: str, enabled: bool) -> Any:
    if not enabled:
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm ships with the dependencies
        return items
    return tqdm(items, desc=desc, unit="q", file=sys.stderr)
