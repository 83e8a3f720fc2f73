"""The ``kgrag`` commands behave alike: one error prefix and exit status for every usage error
(before anything slow runs), the same flag names, the embedding-cache flags from the command
registry, ranked lists printed in rank order, and a warning for a graph file without triples."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import types
from pathlib import Path

import pytest

from kgrag import cli
from kgrag.commands import COMMANDS, Command
from kgrag.context.types import Path as GraphPath
from kgrag.context.types import RetrievalResult, ScoredEntity, Triple
from kgrag.embed import SentenceTransformerEmbedder
from kgrag.graph import read_triples
from kgrag.methods.registry import method_names

REPO = Path(__file__).resolve().parents[1]
MOVIES = str(REPO / "examples" / "data" / "movies.tsv")


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``kgrag argv``, whether argparse or the handler
    reported the error."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def no_model(monkeypatch):
    """Loading the embedding model fails the test: usage errors come before it."""
    def refuse(*args, **kwargs):
        raise AssertionError("the embedding model must not be loaded for a usage error")

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", refuse)
    monkeypatch.setattr(SentenceTransformerEmbedder, "_load_onnx", refuse)


@pytest.fixture
def qa_file(tmp_path):
    path = tmp_path / "qa.txt"
    path.write_text("who directed [Tokyo Godfathers]\tSatoshi Kon\n", encoding="utf-8")
    return str(path)


USAGE_ERRORS = [
    # (argv, prefix, words in the message)
    (["ultrag", MOVIES], "kgrag ultrag", "give a QUERY"),
    (["ultrag", MOVIES, '"Paprika" -> directed_by', "--prompt", "q"], "kgrag ultrag", "not both"),
    (["ultrag", MOVIES, '"Paprika" -> (', "--executor", "symbolic"], "kgrag ultrag", ""),
    (["ultrag", MOVIES, '"Paprika" -> directed_by', "--top", "0"], "kgrag ultrag", "--top"),
    (["ultrag", MOVIES, "--top", "many"], "kgrag ultrag", "invalid int"),  # argparse's own
    (["simgrag", MOVIES, "--question", "Who directed Paprika?"], "kgrag simgrag", "--llm"),
    (["simgrag", MOVIES, "--pattern", '[("a", "r", "UNKNOWN x 1")]', "--answer"],
     "kgrag simgrag", "--question"),
    (["simgrag", MOVIES, "--pattern", '[("a", "r", "UNKNOWN x 1")]', "--k", "0"],
     "kgrag simgrag", "--k"),
    (["graphraft", "export-training-data", MOVIES, "QA", "OUT", "--limit", "0"],
     "kgrag graphraft export-training-data", "--limit"),
    (["graphraft", "export-training-data", MOVIES, "QA", "OUT", "--limit", "x"],
     "kgrag graphraft export-training-data", "invalid int"),
    (["ketrag", "ask", "INDEX", "q", "--context-tokens", "x"], "kgrag ketrag ask", "invalid int"),
    (["eval", "--dataset", "pq-2h"], "kgrag eval", "required"),
    (["eval", "--method", "byokg"], "kgrag eval", "required"),
    (["eval", "--method", "byokg", "--dataset", "pq-2h", "--questions", "q.jsonl"],
     "kgrag eval", "not both"),
    (["eval", "--method", "nope", "--dataset", "pq-2h"], "kgrag eval", "invalid choice"),
    (["ask", MOVIES, "q", "--method", "byokg", "--pattern", '[("a", "r", "b")]'],
     "kgrag ask", "--method simgrag"),
    (["ask", MOVIES, "q", "--method", "graphraft", "--top", "0"], "kgrag ask", "--top"),
    (["byokg", MOVIES, "q", "--top", "0"], "kgrag byokg", "--top"),
    (["link", MOVIES, "x", "--top-k", "0"], "kgrag link", "--top-k"),
    (["load-db", MOVIES, "--backend", "neo4j"], "kgrag load-db", "--uri"),
    (["load-db", MOVIES], "kgrag load-db", "--backend"),
]


@pytest.mark.parametrize("argv, prefix, words", USAGE_ERRORS,
                         ids=[" ".join("GRAPH" if arg == MOVIES else arg for arg in argv)
                              for argv, _, _ in USAGE_ERRORS])
def test_usage_errors_exit_2_with_the_command_prefix(argv, prefix, words, capsys, no_model):
    status, out, err = run(capsys, argv)
    assert status == cli.USAGE_ERROR == 2
    assert "Traceback" not in err
    message = err.strip().splitlines()[-1]
    assert message.startswith(f"{prefix}: error: "), err
    assert words in message


def test_ultrag_without_a_query_is_a_usage_error_not_status_1(capsys):
    """It used to be ``SystemExit("give a QUERY ...")``: status 1 and no prefix."""
    status, out, err = run(capsys, ["ultrag", MOVIES])
    assert (status, out) == (2, "")
    assert err == "kgrag ultrag: error: give a QUERY to execute, or --prompt QUESTION\n"


def test_no_progress_everywhere_and_no_quiet_alias(capsys):
    parser = cli.build_parser()
    paths = {"graphraft export-training-data": [MOVIES, "QA", "OUT"],
             "ketrag index": ["DIR"], "load-db": [MOVIES, "--backend", "falkordb"],
             "eval": []}
    for command, rest in paths.items():
        args = parser.parse_args([*command.split(), *rest, "--no-progress"])
        assert args.no_progress is True, command
        args = parser.parse_args([*command.split(), *rest])
        assert args.no_progress is False, command
    assert capsys.readouterr().err == ""
    # --quiet (the old alias of --no-progress) is gone: one name for one flag
    status, out, err = run(capsys, ["graphraft", "export-training-data", MOVIES, "QA", "OUT",
                                    "--quiet"])
    assert status == 2 and "unrecognized arguments: --quiet" in err
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        assert "--quiet" not in sub.format_help(), name


# ---------------------------------------------------------------------- embedding cache flags
def _leaves(parser: argparse.ArgumentParser):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
    for action in subs:
        for sub in action.choices.values():
            yield from _leaves(sub)


def test_embedding_commands_come_from_the_command_registry():
    assert cli.embedding_commands() == tuple(c.name for c in COMMANDS if c.embeds)
    assert {"link", "ask", "eval", "ketrag", *method_names()} <= set(cli.embedding_commands())
    parser = cli.build_parser()
    ketrag = parser._subparsers._group_actions[0].choices["ketrag"]
    for leaf in _leaves(ketrag):  # index and ask
        assert {"--cache-dir", "--no-cache"} <= set(leaf._option_string_actions), leaf.prog


@pytest.mark.parametrize("embeds", [True, False])
def test_a_new_command_gets_the_cache_flags_from_its_registry_entry(embeds, monkeypatch, capsys):
    module = types.ModuleType("kgrag_test_embedding_command")

    def register(subparsers):
        parser = subparsers.add_parser("toyembed", help="a toy", description="A toy command.")
        sub = parser.add_subparsers(dest="toy_command", required=True)
        leaf = sub.add_parser("run", help="run it", description="Run the toy.")
        leaf.set_defaults(func=lambda args: print(f"cache_dir={args.cache_dir} "
                                                  f"no_cache={args.no_cache}"))

    module.register = register
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr("kgrag.commands.COMMANDS",
                        [*COMMANDS, Command("toyembed", module.__name__, embeds=embeds)])
    assert ("toyembed" in cli.embedding_commands()) is embeds
    leaf = cli.build_parser()._subparsers._group_actions[0].choices["toyembed"]
    leaf = next(iter(_leaves(leaf)))
    assert ("--no-cache" in leaf._option_string_actions) is embeds
    if embeds:
        assert cli.main(["toyembed", "run", "--cache-dir", "somewhere", "--no-cache"]) == 0
        assert capsys.readouterr().out == "cache_dir=somewhere no_cache=True\n"


def test_ketrag_index_keeps_its_vectors_in_the_cache_dir(tmp_path, monkeypatch, capsys, minilm):
    """``kgrag ketrag index --cache-dir`` puts the embedding cache there (next to the LLM
    replies); ``--no-cache`` writes no vectors. The store's minimum list length is lowered so
    the small corpus reaches the disk."""
    from kgrag.embed import store

    monkeypatch.setattr(store, "default_store", lambda: store.VectorStore(
        store.cache_root(), min_texts=2) if store.cache_enabled() else None)
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, text in enumerate(["Ada Lovelace was born in London. She wrote the first program.",
                              "Bruno Keller was born in Ostbruck. He builds bridges.",
                              "Ostbruck is a town on the river Aller in Lower Saxony."]):
        (docs / f"d{i}.txt").write_text(text, encoding="utf-8")
    cache = tmp_path / "cache"
    argv = ["ketrag", "index", str(docs), "--out", str(tmp_path / "idx"), "--chunk-size", "30",
            "--splits", "1", "--no-progress"]
    assert cli.main(argv + ["--cache-dir", str(cache)]) == 0
    written = sorted(p.name for p in (cache / "vectors").glob("*.npy"))
    assert written  # sub-chunk and keyword vectors
    assert cli.main(argv + ["--cache-dir", str(cache)]) == 0  # read back, nothing new
    assert sorted(p.name for p in (cache / "vectors").glob("*.npy")) == written
    fresh = tmp_path / "fresh"
    assert cli.main(argv + ["--cache-dir", str(fresh), "--no-cache"]) == 0
    assert not (fresh / "vectors").exists()
    capsys.readouterr()


# ---------------------------------------------------------------------- rank order
def _printed_items(out: str) -> list[tuple[str, float]]:
    """``(name, score)`` of the ``  N. [score] name`` / ``  N. name (score)`` lines of
    ``kgrag ask``, in print order."""
    found = []
    for line in out.splitlines():
        match = (re.match(r"\s+\d+\. \[(-?\d+\.\d+)\] (.*)$", line)
                 or re.match(r"\s+\d+\. (.*) \((-?\d+\.\d+)\)()$", line))
        if match:
            groups = match.groups()
            score, name = (groups[0], groups[1]) if line.split(". ", 1)[1].startswith("[") \
                else (groups[1], groups[0])
            found.append((name, float(score)))
    return found


def test_ask_graphraft_prints_the_api_order_best_first(capsys, minilm):
    """The command line prints the method's own order -- the order both adapters return -- and
    the scores never rise along it (issue 29: the CLI re-sorted GraphRAFT by score, so it put
    another answer first than the API)."""
    status, out, err = run(capsys, ["ask", MOVIES, "Who directed Tokyo Godfathers?",
                                    "--method", "graphraft", "--top", "20"])
    assert status == 0, err
    items = _printed_items(out)
    assert len(items) >= 5
    scores = [score for _, score in items]
    assert scores == sorted(scores, reverse=True)
    from kgrag.commands.ask import retrieve

    kg = read_triples(MOVIES)
    result = retrieve(kg, "Who directed Tokyo Godfathers?", "graphraft", top=20)
    assert [name for name, _ in items] == [i.name for i in result.items[:20]]


def test_ask_prints_items_in_the_methods_order(capsys, monkeypatch):
    """Whatever the kinds and scales of the items, ``kgrag ask`` keeps the method's order."""
    triples = [Triple("a", "r", "b", score=0.9), Triple("c", "r", "d", score=0.2),
               Triple("e", "r", "f")]
    entities = [ScoredEntity("high", 0.8), ScoredEntity("low", -0.1, show_score=False)]
    paths = [GraphPath(("a", "b"), ("r",), (True,), score=0.5)]
    result = RetrievalResult("q", items=[entities[0], triples[0], paths[0], triples[1],
                                         entities[1], triples[2]], method="stub")
    monkeypatch.setattr("kgrag.commands.ask.retrieve", lambda *a, **k: result)
    status, out, _ = run(capsys, ["ask", MOVIES, "q", "--method", "byokg"])
    assert status == 0
    lines = [line.strip() for line in out.splitlines() if re.match(r"\s+\d+\. ", line)]
    assert lines == ["1. high (0.800)", "2. [0.900] a -> r -> b", "3. [0.500] a -> r -> b",
                     "4. [0.200] c -> r -> d", "5. [-0.100] low", "6. e -> r -> f"]


def test_in_rank_order_keeps_ties_and_ignores_nan():
    from kgrag.commands.common import in_rank_order

    items = [ScoredEntity("first", 0.5), ScoredEntity("nan", float("nan")),
             ScoredEntity("second", 0.5), ScoredEntity("top", 0.7)]
    assert [i.name for i in in_rank_order(items)] == ["top", "first", "second", "nan"]
    assert in_rank_order([]) == []


# ---------------------------------------------------------------------- empty graph files
@pytest.mark.parametrize("content, reason", [
    ("", "the file is empty"),
    ("\n\n", "the file is empty"),
    ("head\trelation\ttail\n", "only a header row"),
])
def test_a_graph_file_without_triples_warns(content, reason, tmp_path, capsys, caplog):
    path = tmp_path / "g.tsv"
    path.write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgrag"):
        kg = read_triples(path)
    assert kg.num_edges == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [f"{path} holds no triples ({reason}): the graph has no edges"]
    caplog.clear()
    status, out, err = run(capsys, ["info", str(path)])
    assert status == 0 and "edges: 0" in out
    assert err == f"kgrag: warning: {path} holds no triples ({reason}): the graph has no edges\n"


def test_skipping_every_line_warns_too(tmp_path, caplog):
    path = tmp_path / "g.tsv"
    path.write_text("a\tb\tc\td\nonly\ttwo\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgrag"):
        read_triples(path, on_error="skip")
    assert any("every line was malformed" in r.getMessage() for r in caplog.records)


def test_a_graph_with_triples_does_not_warn(tmp_path, caplog):
    path = tmp_path / "g.tsv"
    path.write_text("head\trelation\ttail\na\tr\tb\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="kgrag"):
        assert read_triples(path).num_edges == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
