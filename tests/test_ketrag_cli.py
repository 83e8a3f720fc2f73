"""``kgrag ketrag index DIR`` / ``kgrag ketrag ask INDEX "question"`` end to end."""

from __future__ import annotations

import json

import ketrag_fakes
import pytest
from test_ketrag_index import CITY_DOCS

from kgrag.commands.common import load_factory
from kgrag.commands.ketrag import read_documents
from kgrag.methods.ketrag import KETIndex

EMB = "ketrag_fakes:HashingEmbedder"  # a class is a factory too


def _cli(argv):
    import argparse

    from kgrag.commands.ketrag import register

    parser = argparse.ArgumentParser(prog="kgrag")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture()
def corpus(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    for i, text in enumerate(CITY_DOCS):
        (folder / ("sub" if i % 2 else "") / f"city{i}.txt").write_text(text)
    (folder / "ignored.bin").write_bytes(b"\x00\x01")
    return folder


def test_index_and_ask_without_llm(corpus, tmp_path, capsys):
    assert _cli(["ketrag", "index", str(corpus), "--chunk-size", "30", "--splits", "1",
                 "--no-progress", "--embedder", EMB]) == 0
    out = capsys.readouterr().out
    assert "beta=0" in out and "projected extraction at beta=1" in out
    index = KETIndex.load(tmp_path / "docs.ketrag")
    assert index.num_chunks == 10 and index.skeleton.graph.num_nodes == 0
    assert {d["metadata"]["source"] for d in index.documents} == {
        f"{'sub/' if i % 2 else ''}city{i}.txt" for i in range(10)}
    assert _cli(["ketrag", "ask", str(tmp_path / "docs.ketrag"), "Where was Bruno Keller born?",
                 "--json", "--embedder", EMB]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["items"] and data["items"][0]["channel"] == "keyword"
    assert any("Ostbruck" in item["text"] for item in data["items"][:2])


def test_index_and_ask_with_an_llm_factory(corpus, tmp_path, capsys):
    responder = ketrag_fakes.CLI_RESPONDER
    responder.calls.clear()
    out_dir = tmp_path / "idx"
    assert _cli(["ketrag", "index", str(corpus), "--out", str(out_dir), "--llm",
                 "ketrag_fakes:fake_chat_model", "--chunk-size", "30", "--splits", "1",
                 "--no-progress", "--embedder", EMB]) == 0
    assert responder.kinds()["extract"] == 8  # beta defaults to 0.8 with an LLM: 8 of 10 chunks
    assert (tmp_path / "idx.cache" / "llm_cache.jsonl").is_file()
    capsys.readouterr()
    before = len(responder.calls)
    assert _cli(["ketrag", "ask", str(out_dir), "Which country was Ada Lovelace born in?",
                 "--llm", "ketrag_fakes:fake_chat_model", "--json", "--embedder", EMB]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["usage"]["calls"] == 1 and len(responder.calls) == before + 1
    assert data["answer"]


def test_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_documents(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=".txt"):
        read_documents(tmp_path / "empty")
    with pytest.raises(ValueError, match="module:factory"):
        load_factory("no_colon_here")
    assert load_factory(None) is None
