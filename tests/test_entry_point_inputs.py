"""What every method and adapter does with inputs it cannot work on (issue 29, items 3 and 4):

* an empty graph gives an empty result that says why (``metadata["empty_reason"]``) or a typed
  error -- never a numpy traceback -- and ``kgrag ask`` on an empty file exits cleanly;
* a question that is not a non-empty string is an :class:`InvalidQuestionError` at every entry
  point: the core methods, both adapters' retrievers, query engines, tools and answer chain.
"""

from __future__ import annotations

import asyncio

import pytest
from ketrag_fakes import HashingEmbedder
from langchain_core.language_models import FakeListChatModel

import langchain_kgrag as lc
import llama_index_kgrag as li
from kgrag import KnowledgeGraph, cli
from kgrag.errors import EmptyInputError, InvalidQuestionError, KgragError
from kgrag.methods.base import EMPTY_GRAPH_REASON
from kgrag.methods.registry import get_method

EMPTY = KnowledgeGraph.from_triples([])
SIMGRAG_REPLY = '{"divided": ["x"], "triples": [("UNKNOWN person 1", "knows", "Bob")]}'


def _build(name: str, graph: KnowledgeGraph, **kwargs):
    return get_method(name).build(graph, embedder=HashingEmbedder(), **kwargs)


@pytest.mark.parametrize("name, kwargs", [
    ("byokg", {}),
    ("byokg", {"llm": FakeListChatModel(responses=["<entities>Bob</entities>"] * 4)}),
    ("simgrag", {"llm": FakeListChatModel(responses=[SIMGRAG_REPLY])}),
    ("graphraft", {}),
    ("graphraft", {"llm": FakeListChatModel(responses=["Bob"] * 4)}),
])
def test_an_empty_graph_is_an_empty_result_with_a_reason(name, kwargs):
    result = _build(name, EMPTY, **kwargs).retrieve("Who is Bob?")
    assert result.items == []
    assert result.metadata["empty_reason"] == EMPTY_GRAPH_REASON


def test_an_empty_graph_reason_only_when_the_graph_is_empty():
    kg = KnowledgeGraph.from_triples([("Alice", "knows", "Carol")])
    result = _build("simgrag", kg, llm=FakeListChatModel(responses=[
        '{"divided": ["x"], "triples": [("UNKNOWN a 1", "hates", "UNKNOWN b 1")]}'])
                    ).retrieve("Who hates whom?")
    assert result.metadata.get("empty_reason") != EMPTY_GRAPH_REASON


def test_ultrag_on_an_empty_graph_is_a_typed_error():
    llm = FakeListChatModel(responses=['<query>"Bob" -> knows</query>'] * 3)
    with pytest.raises(KgragError):
        get_method("ultrag").build(EMPTY, llm=llm, linking="exact").retrieve("Who is Bob?")


def test_ketrag_without_text_is_a_typed_error():
    with pytest.raises(EmptyInputError):
        get_method("ketrag").method_class().from_documents(
            ["", "  "], embedder=HashingEmbedder(), budget=0, progress=False)


def test_kgrag_ask_on_an_empty_file_exits_cleanly(capsys, tmp_path):
    path = tmp_path / "empty.tsv"
    path.write_text("head\trelation\ttail\n")
    status = cli.main(["ask", str(path), "Who is Bob?", "--method", "byokg"])
    assert status == 0
    assert f"nothing retrieved: {EMPTY_GRAPH_REASON}" in capsys.readouterr().out

# ---------------------------------------------------------------------- questions
BAD_QUESTIONS = [123, ["Who is Bob?"], {"q": "Who is Bob?"}, None, "", "   "]
KG = KnowledgeGraph.from_triples([("Bob", "knows", "Alice"), ("Alice", "works_in", "Sales")])


@pytest.fixture(scope="module")
def wrapped():
    emb = HashingEmbedder()
    return {"lc": lc.GraphRAFTRetriever.from_graph(KG, embedder=emb),
            "li": li.GraphRAFTRetriever.from_graph(KG, embedder=emb),
            "engine": li.GraphRAFTQueryEngine.from_graph(KG, embedder=emb)}


def _entry_points(w):
    method = w["lc"].method
    return {
        "core.retrieve": method.retrieve,
        "core.aretrieve": lambda q: asyncio.run(method.aretrieve(q)),
        "core.answer": method.answer,
        "core.answer_from": lambda q: method.answer_from(q, method.retrieve("Who is Bob?")),
        "langchain.invoke": w["lc"].invoke,
        "langchain.ainvoke": lambda q: asyncio.run(w["lc"].ainvoke(q)),
        "langchain.batch": lambda q: w["lc"].batch([q]),
        "langchain.answer_chain": w["lc"].answer_chain().invoke,
        "llama_index.retrieve": w["li"].retrieve,
        "llama_index.aretrieve": lambda q: asyncio.run(w["li"].aretrieve(q)),
        "llama_index.tool": w["li"].as_tool().call,
        "llama_index.tool_input": lambda q: w["li"].as_tool().call(input=q),
        "llama_index.query": w["engine"].query,
        "llama_index.aquery": lambda q: asyncio.run(w["engine"].aquery(q)),
        "llama_index.engine_tool": w["engine"].as_tool().call,
    }


@pytest.mark.parametrize("question", BAD_QUESTIONS, ids=repr)
def test_a_bad_question_is_a_typed_error_everywhere(wrapped, question):
    for where, call in _entry_points(wrapped).items():
        with pytest.raises(InvalidQuestionError) as caught:
            call(question)
        assert isinstance(caught.value, (TypeError, ValueError)), where


def test_the_langchain_tool_refuses_an_empty_question(wrapped):
    with pytest.raises(InvalidQuestionError):
        wrapped["lc"].as_search_tool().invoke({"query": " "})


def test_the_message_names_what_was_passed():
    with pytest.raises(InvalidQuestionError, match="got int 123"):
        get_method("graphraft").build(KG, embedder=HashingEmbedder()).retrieve(123)


def test_every_method_class_checks_its_question():
    for name in ("byokg", "simgrag", "graphraft", "ultrag", "ketrag"):
        cls = get_method(name).method_class()
        for entry in ("retrieve", "aretrieve", "answer", "aanswer", "answer_from",
                      "aanswer_from"):
            assert getattr(getattr(cls, entry), "__kgrag_checks_question__", False), \
                f"{name}.{entry}"
