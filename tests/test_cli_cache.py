"""The CLI's embedding cache flags, early argument checks and the model-loading note."""

from __future__ import annotations

import argparse
import os

import pytest

from kgrag import cli
from kgrag.embed import SentenceTransformerEmbedder
from kgrag.embed.store import cache_enabled, cache_root

PATTERN = '[("UNKNOWN film 1", "directed_by", "Person 7")]'


def _leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaf_commands(sub, prefix + (name,))


def test_every_embedding_command_has_cache_flags():
    parser = cli.build_parser()
    found = set()
    for path, leaf in _leaf_commands(parser):
        if path[0] in cli.embedding_commands():
            found.add(path[0])
            assert "--cache-dir" in leaf._option_string_actions, path
            assert "--no-cache" in leaf._option_string_actions, path
            assert "--no-cache" in leaf.format_help()
    assert found == set(cli.embedding_commands())


@pytest.mark.parametrize("argv", [
    ["simgrag", "no-such-graph.tsv", "--pattern", '[("a", "b")]'],
    ["simgrag", "no-such-graph.tsv", "--pattern", "__import__('os')"],
    ["ask", "no-such-graph.tsv", "q", "--method", "simgrag", "--pattern", "[(1, 2, 3, 4)]"],
    ["ask", "no-such-graph.tsv", "q", "--method", "ultrag", "--query", '"Japan" -> ('],
])
def test_malformed_pattern_or_query_fails_before_graph_and_model(argv, capsys, monkeypatch):
    def no_model(*a, **k):
        raise AssertionError("the embedding model must not be loaded")

    monkeypatch.setattr(SentenceTransformerEmbedder, "_load", no_model)
    monkeypatch.setattr(SentenceTransformerEmbedder, "_load_onnx", no_model)
    assert cli.main(argv) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert err.startswith(f"kgrag {argv[0]}: error:") and "no-such-graph" not in err


@pytest.fixture
def names_graph(tmp_path):
    """A graph with 400 node names (enough for the on-disk cache)."""
    path = tmp_path / "graph.tsv"
    path.write_text("".join(f"Film {i}\tdirected_by\tPerson {i % 200}\n" for i in range(200)),
                    encoding="utf-8")
    return path


def test_second_simgrag_run_reads_the_name_vectors_from_the_cache(names_graph, tmp_path,
                                                                   capsys, monkeypatch, minilm):
    cache = tmp_path / "cache"
    argv = ["simgrag", str(names_graph), "--pattern", PATTERN, "--cache-dir", str(cache)]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out.splitlines()[:-1]  # the last line holds timings
    assert "Person 7" in "\n".join(first)
    assert len(list((cache / "vectors").glob("*.npy"))) == 1
    big_calls = []
    real = SentenceTransformerEmbedder.embed_documents

    def counting(self, texts):
        if len(texts) >= 100:
            big_calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(SentenceTransformerEmbedder, "embed_documents", counting)
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[:-1] == first
    assert big_calls == []  # the 400 names came from disk
    # --no-cache: embedded again, nothing read or written
    fresh = tmp_path / "fresh"
    assert cli.main(argv[:-2] + ["--cache-dir", str(fresh), "--no-cache"]) == 0
    assert big_calls == [400] and not (fresh / "vectors").exists()
    # the process is back to its defaults afterwards
    assert cache_enabled() and cache_root() != fresh


def test_loading_note_is_one_line_on_stderr(capsys):
    args = argparse.Namespace(no_cache=False, cache_dir=os.environ.get("KGRAG_CACHE_DIR"))
    with cli._embedding_setup(args):
        SentenceTransformerEmbedder().embed_query("hello")
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "loading the embedding model" in line]
    assert len(notes) == 1 and notes[0].startswith("kgrag: loading the embedding model "
                                                   "all-MiniLM-L6-v2")
    SentenceTransformerEmbedder().embed_query("outside the command: no note")
    assert "loading" not in capsys.readouterr().err
