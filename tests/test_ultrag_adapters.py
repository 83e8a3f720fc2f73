"""UltRAG through LangChain (retriever, tool) and LlamaIndex (retriever, query engine)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llama_index.core.query_engine import RetrieverQueryEngine
from llm_fakes import ScriptedLlamaLLM

from kgrag import KnowledgeGraph
from langchain_kgrag.ultrag import UltRAGRetriever as LCUltRAGRetriever
from llama_index_kgrag.ultrag import UltRAGQueryEngine
from llama_index_kgrag.ultrag import UltRAGRetriever as LIUltRAGRetriever


@pytest.fixture(autouse=True)
def _symbolic_executor_by_default(monkeypatch):
    """These tests pin the crisp scores of the symbolic executor (memberships exactly 1.0,
    hand-checked answer sets); the neural executor, UltRAG's default, is tested in
    test_ultrag_neural.py / test_ultrag_executors.py. Explicit ``executor=`` arguments win."""
    from kgrag.methods.ultrag import pipeline

    monkeypatch.setattr(pipeline, "DEFAULT_EXECUTOR", "symbolic")

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"), ("Paprika", "directed_by", "Satoshi Kon"),
    ("Perfect Blue", "directed_by", "Satoshi Kon"), ("Paprika", "release_year", "2006"),
    ("Tokyo Godfathers", "release_year", "2003"), ("Perfect Blue", "release_year", "1997"),
    ("Akira", "directed_by", "Katsuhiro Otomo"), ("Akira", "release_year", "1988"),
]


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_triples(TRIPLES)


def qid(kg, name):
    return f"Q{kg.node_index[name]}"


def pid(kg, name):
    return f"P{kg.relation_index[name]}"


def test_langchain_retriever_returns_entity_documents(kg):
    query = f"{qid(kg, 'Satoshi Kon')} -> {pid(kg, 'directed_by')}_inv"
    chat = GenericFakeChatModel(messages=iter([AIMessage(content=f"<query>{query}</query>")]))
    retriever = LCUltRAGRetriever.from_graph(kg, llm=chat, linking="exact")
    assert isinstance(retriever, LCBaseRetriever)
    docs = retriever.invoke("Which films did Satoshi Kon direct?")
    assert [d.metadata["entity"] for d in docs] == sorted(
        ["Tokyo Godfathers", "Paprika", "Perfect Blue"], key=lambda n: kg.node_index[n])
    assert all(isinstance(d, Document) for d in docs)
    meta = docs[0].metadata
    assert meta["query"] == query and meta["score"] == 1.0 and meta["rank"] == 0
    assert meta["entity_id"] == qid(kg, docs[0].metadata["entity"])
    assert meta["usage_calls"] == 1


def test_langchain_async_and_tool(kg):
    query = f"{qid(kg, 'Paprika')} -> {pid(kg, 'release_year')}"
    llm = FakeListChatModel(responses=[query, query])
    retriever = LCUltRAGRetriever.from_graph(kg, llm=llm, linking="exact")
    docs = asyncio.run(retriever.ainvoke("When was Paprika released?"))
    assert [d.metadata["entity"] for d in docs] == ["2006"]
    tool = retriever.as_search_tool()
    assert tool.name == "knowledge_graph_answer_question"
    assert "2006" in tool.invoke({"query": "When was Paprika released?"})


def test_langchain_execute_without_llm(kg):
    retriever = LCUltRAGRetriever.from_graph(kg, linking="exact")
    docs = retriever.execute('AND("Satoshi Kon" -> directed_by_inv, "2006" -> release_year_inv)')
    assert [d.metadata["entity"] for d in docs] == ["Paprika"]
    assert docs[0].page_content == "Paprika (1.000)"


def test_langchain_answer_makes_two_calls(kg):
    query = f"{qid(kg, 'Satoshi Kon')} -> {pid(kg, 'directed_by')}_inv"
    llm = FakeListChatModel(responses=[query, f"<answers>{qid(kg, 'Paprika')}</answers>"])
    retriever = LCUltRAGRetriever.from_graph(kg, llm=llm, linking="exact")
    answer = retriever.answer("Which Satoshi Kon film is about dreams?")
    assert answer.answers == ["Paprika"] and answer.usage.calls == 2


def test_llama_index_retriever_and_execute(kg):
    llm = ScriptedLlamaLLM(replies=[f"{qid(kg, 'Akira')} -> directed_by"], prompts=[])
    retriever = LIUltRAGRetriever.from_graph(kg, llm=llm, linking="exact")
    assert isinstance(retriever, LIBaseRetriever)
    nodes = retriever.retrieve("Who directed Akira?")
    assert [n.node.metadata["entity"] for n in nodes] == ["Katsuhiro Otomo"]
    assert nodes[0].score == 1.0 and nodes[0].node.metadata["query"].endswith("directed_by")
    assert "Relations (id: label)" in llm.prompts[0]
    offline = LIUltRAGRetriever.from_graph(kg, linking="exact")
    assert [n.node.metadata["entity"] for n in offline.execute('"1988" -> release_year_inv')] \
        == ["Akira"]


def test_llama_index_query_engine_runs_the_whole_recipe(kg):
    llm = ScriptedLlamaLLM(replies=[
        f"<query>{qid(kg, 'Satoshi Kon')} -> {pid(kg, 'directed_by')}_inv</query>",
        f"{qid(kg, 'Perfect Blue')}, {qid(kg, 'Paprika')}"], prompts=[])
    engine = UltRAGQueryEngine.from_graph(kg, llm=llm, linking="exact")
    assert isinstance(engine, RetrieverQueryEngine)
    response = engine.query("Name two Satoshi Kon films")
    assert response.metadata["answers"] == ["Perfect Blue", "Paprika"]
    assert response.metadata["usage"]["calls"] == 2
    assert str(response) == "Perfect Blue, Paprika"
    assert len(response.source_nodes) == 3
    assert "Perfect Blue" in llm.prompts[1] and "1.000" in llm.prompts[1]


# ------------------------------------------------------------------ command line and demo
def test_kgrag_ultrag_command(capsys):
    from pathlib import Path

    from kgrag import cli

    movies = str(Path(__file__).resolve().parent.parent / "examples" / "data" / "movies.tsv")
    status = cli.main(["ultrag", movies,
                       'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) '
                       '-> directed_by',
                       "--executor", "symbolic"])
    out = capsys.readouterr().out
    assert status == 0
    assert "1.000  Satoshi Kon" in out and "1.000  Hayao Miyazaki" in out
    assert cli.main(["ultrag", movies, "--prompt", "Who directed Paprika?"]) == 0
    assert "P0: " in capsys.readouterr().out
    assert cli.main(["ultrag", movies, '"Paprika" -> P999']) == 2
    assert "unknown relation" in capsys.readouterr().err


# ------------------------------------------------------------------ the two agent tools
def test_the_question_tool_and_the_query_tool_are_told_apart(kg):
    """Issue 29 item 12: the two tools' names and descriptions say what their input is and
    name the other tool; both adapters offer the query tool under the same name."""
    from kgrag.methods.ultrag.tools import QUERY_TOOL_NAME, QUESTION_TOOL_NAME

    lc = LCUltRAGRetriever.from_graph(kg, linking="exact", executor="hybrid", threads=1)
    li = LIUltRAGRetriever.from_graph(kg, linking="exact", executor="hybrid", threads=1)
    question_tools = [lc.as_search_tool(), li.as_tool()]
    query_tools = [lc.as_query_tool(), li.as_query_tool()]
    question_meta = [(question_tools[0].name, question_tools[0].description),
                     (question_tools[1].metadata.name, question_tools[1].metadata.description)]
    query_meta = [(query_tools[0].name, query_tools[0].description),
                  (query_tools[1].metadata.name, query_tools[1].metadata.description)]
    for name, description in question_meta:
        assert name == QUESTION_TOOL_NAME and QUERY_TOOL_NAME in description
        assert "question" in description and "not a query" in description
    for name, description in query_meta:
        assert name == QUERY_TOOL_NAME and QUESTION_TOOL_NAME in description
        assert "not a question" in description
    query = 'AND("Satoshi Kon" -> directed_by_inv, "2006" -> release_year_inv)'
    lc_text = query_tools[0].invoke({"query": query})
    li_text = query_tools[1].call(query=query).content
    for text in (lc_text, li_text):
        assert text.splitlines()[0] == "Paprika (1.000, proved)"
    # k = 10 entities asked, one proved: the answer says why there is only one
    assert "graph proves 1" in lc_text and "no neural guesses" in lc_text
    guesses = query_tools[0].invoke({"query": '"2006" -> directed_by'})
    assert ", guess)" in guesses.splitlines()[0]
    assert query_tools[1].call(query="AND(").content.startswith("Error:")


def test_cli_says_why_fewer_rows_than_top_are_shown(capsys):
    from pathlib import Path

    from kgrag import cli

    movies = str(Path(__file__).resolve().parent.parent / "examples" / "data" / "movies.tsv")
    assert cli.main(["ultrag", movies, '"Jamaica" -> set_in_inv', "--top", "5",
                     "--executor", "hybrid"]) == 0
    out = capsys.readouterr().out
    assert "2 answers proved by the graph; no neural guesses needed" in out
    assert "1.000  Cool Runnings  [Q161]  proved" in out
    assert "(--top 5: 2 shown; only 2 entities have a non-zero membership)" in out
    assert cli.main(["ultrag", movies, '"Jamaica" -> set_in_inv', "--top", "150",
                     "--executor", "neural", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "guess" in out and "scored below --min-membership 0.001" in out
