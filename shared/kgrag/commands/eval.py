"""``kgrag eval``: run one method on one dataset and print the summary table row.

::

    kgrag eval --method simgrag --dataset metaqa-2hop --limit 500 --mode oracle
    kgrag eval --method ketrag --dataset musique --mode llm-free --cache-dir .cache/emb
    kgrag eval --method byokg --dataset pq-2h --mode llm --llm mypkg.models:make_llm
    kgrag eval --list                      # which method runs on which dataset, in which modes
    kgrag eval --method byokg --mode llm-free --questions my_qa.jsonl --graph my_triples.csv
    kgrag eval --method simgrag --questions my_qa.jsonl --graph my_triples.csv   # gold paths

``--llm package.module:factory`` names a function returning any LangChain chat model,
LlamaIndex LLM or callable ``prompt -> text`` (the same convention as ``kgrag ketrag``).
``--param key=value`` (repeatable) passes a constructor parameter to the method; values are
read as Python literals when they parse (``3``, ``True``, ``'prefer'``), else as strings.
"""

from __future__ import annotations

import argparse
import ast
from typing import Any

from kgrag.commands.common import add_model_arguments, load_factory
from kgrag.errors import KgragError


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``["k=5", "injective='prefer'"]`` -> ``{"k": 5, "injective": "prefer"}``."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise KgragError(f"--param needs key=value with a parameter name, got {pair!r}")
        try:
            value: Any = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        params[key.strip()] = value
    return params


def _cmd_eval(args: argparse.Namespace) -> int:
    from kgrag.eval.runner import (
        METHOD_DATASETS,
        check_applicable,
        evaluate,
        markdown_table,
        user_dataset,
    )

    if args.list:
        for method, (datasets, modes) in METHOD_DATASETS.items():
            print(f"{method:<10} modes: {', '.join(modes):<24} datasets: {', '.join(datasets)}")
        return 0
    if not args.method or not (args.dataset or args.questions):
        raise KgragError("--method and --dataset (or --questions) are required "
                         "(see kgrag eval --list)")
    if args.dataset and args.questions:
        raise KgragError("give either --dataset or --questions, not both")
    if (args.graph or args.documents or args.relation_labels) and not args.questions:
        raise KgragError("--graph, --documents and --relation-labels go with --questions")
    for option, value in (("--limit", args.limit), ("--k", args.k)):
        if value is not None and value < 1:
            raise KgragError(f"{option} must be at least 1")
    dataset: Any = args.dataset
    try:
        if args.questions:
            dataset = user_dataset(args.questions, graph=args.graph, documents=args.documents,
                                   relation_labels=args.relation_labels)
        else:
            check_applicable(args.method, args.dataset, args.mode)
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    if args.threads:
        try:
            import torch

            torch.set_num_threads(args.threads)
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
    llm = load_factory(args.llm, "--llm")
    if args.mode == "llm" and llm is None:
        raise KgragError("--mode llm needs --llm package.module:factory")
    # --llm local:DIR, a kgrag fine-tuned adapter: the method uses it as it was trained
    from kgrag.finetune.use import finetuned_params

    params = {**finetuned_params(args.llm, args.method), **parse_params(args.param)}
    summary = evaluate(args.method, dataset, mode=args.mode, llm=llm, limit=args.limit,
                       seed=args.seed, out_dir=args.out, data_root=args.data_root,
                       embedder=load_factory(args.embedder, "--embedder"),
                       cache_dir=None if args.no_cache else args.cache_dir,
                       params=params, k=args.k,
                       progress=not args.no_progress)
    print(markdown_table([summary], k=args.k))
    print(f"per-question records: {summary['jsonl']}")
    return 0


def register(subparsers: Any) -> None:
    from kgrag.commands.common import add_command
    from kgrag.methods.registry import KG_DATASETS, TEXT_DATASETS, method_names

    parser = add_command(
        subparsers, "eval", help="evaluate a method on a dataset (oracle / LLM-free / LLM modes)",
        description="""
            Run a method on a seeded sample of a dataset; writes per-question JSONL
            (resumable) and a summary JSON under --out, and prints the summary row.

            --method is required, and so is one of --dataset (a benchmark, read from
            --data-root) or --questions (your own questions with --graph or --documents);
            only --list needs neither.""",
        examples=["kgrag eval --list",
                  "kgrag eval --method simgrag --dataset metaqa-2hop --limit 500 --mode oracle",
                  "kgrag eval --method ketrag --dataset musique --mode llm-free",
                  "kgrag eval --method byokg --dataset pq-2h --mode llm --llm "
                  "mypkg.models:make_llm",
                  "kgrag eval --method byokg --mode llm-free --questions my_qa.jsonl --graph "
                  "my_triples.csv"],
        notes="--llm package.module:factory names a function returning any LangChain chat "
              "model, LlamaIndex LLM or callable prompt -> text. --param key=value "
              "(repeatable) passes a constructor parameter to the method; values are read as "
              "Python literals when they parse (3, True, 'prefer'), else as strings.")
    parser.usage = ("%(prog)s --method METHOD (--dataset DATASET | --questions FILE --graph "
                    "GRAPH | --questions FILE --documents FILE) [options]\n"
                    "       %(prog)s --list")
    parser.add_argument("--method", choices=method_names(), metavar="METHOD",
                        help="required (except with --list): " + ", ".join(method_names())
                             + " (see --list)")
    parser.add_argument("--dataset", metavar="DATASET",
                        help="required unless --questions or --list is given: "
                             + ", ".join(KG_DATASETS + TEXT_DATASETS))
    parser.add_argument("--questions", metavar="FILE",
                        help="your own questions instead of --dataset: JSONL of {question, "
                             "answers, entities?, id?, path? or paths?}; a gold 'path' "
                             "(\"r1 -> r2_inv\") or 'paths' ([{entity, path}, ...] meeting at "
                             "the answer) enables --mode oracle")
    parser.add_argument("--graph", metavar="GRAPH",
                        help="with --questions: triples file or saved graph directory")
    parser.add_argument("--relation-labels", metavar="FILE",
                        help="with --graph: relation labels (TSV relation<TAB>label..., CSV or "
                             "JSON), e.g. for Wikidata-style P ids")
    parser.add_argument("--documents", metavar="FILE",
                        help="with --questions: text file, one passage per line (KET-RAG)")
    parser.add_argument("--mode", choices=("oracle", "llm-free", "llm"), default="oracle",
                        help="oracle (gold paths play a perfect LLM; default), llm-free, or llm")
    parser.add_argument("--limit", type=int, default=500,
                        help="questions, a seeded random sample (default 500)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the --limit sample (default 0)")
    parser.add_argument("--out", default="eval-results",
                        help="output directory (default eval-results)")
    parser.add_argument("--data-root", metavar="DIR", default=None,
                        help="datasets folder holding metaqa/, pathquestion/, musique/, hotpotqa/ "
                             "(default: $KGRAG_DATA, else ../shared/data from the current folder, "
                             "else beside the kgrag checkout)")
    parser.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="embedding cache: name and passage vectors kept between runs, and "
                             "the ONNX export of the model (default: $KGRAG_CACHE_DIR or the "
                             "user cache directory)")
    add_model_arguments(parser, llm_help="package.module:factory returning a LangChain/"
                                         "LlamaIndex LLM, or local:smollm2-135m (a model run "
                                         "on this machine; needed by --mode llm)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="method constructor parameter (repeatable)")
    parser.add_argument("--k", type=int, default=10, help="k of Hits@k (default 10)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: single-question inference; 0: "
                             "torch's default)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--list", action="store_true",
                        help="list methods, modes and datasets, and exit")
    parser.set_defaults(func=_cmd_eval)
