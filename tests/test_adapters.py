"""The framework adapters over a small real method: LangChain and LlamaIndex classes for real."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llama_index.core.schema import NodeWithScore

from kgrag import KnowledgeGraph, RetrievalResult, Triple
from kgrag.context.metadata import unflatten
from kgrag.context.types import Answer, Path
from kgrag.methods.base import KGMethod
from langchain_kgrag import KGRetriever as LCRetriever
from llama_index_kgrag import KGQueryEngine
from llama_index_kgrag import KGRetriever as LIRetriever


class NeighbourMethod(KGMethod):
    """Exact-name lookup of question words + one-hop edges (a minimal real method)."""

    name = "neighbours"

    def __init__(self, kg: KnowledgeGraph):
        self.kg = kg

    def retrieve(self, question: str) -> RetrievalResult:
        found = [n for n in self.kg.node_names if n.lower() in question.lower()]
        items = [Triple(t.head, t.relation, t.tail, score=1.0) for t in self.kg.one_hop(found)]
        items += self.kg.shortest_paths(found[:1], found[1:], max_hops=2)
        return RetrievalResult(question, items, method=self.name)

    def answer(self, question: str) -> Answer:
        result = self.retrieve(question)
        tails = [i.tail for i in result.items if isinstance(i, Triple)]
        return Answer(question, tails, ", ".join(tails), result)


@pytest.fixture()
def method():
    kg = KnowledgeGraph.from_triples([
        ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
        ("Paprika", "directed_by", "Satoshi Kon"),
        ("Satoshi Kon", "born_in", "Sapporo"),
    ])
    return NeighbourMethod(kg)


def test_langchain_retriever_is_a_real_base_retriever(method):
    retriever = LCRetriever(method=method)
    assert isinstance(retriever, LCBaseRetriever)
    docs = retriever.invoke("Who directed Tokyo Godfathers?")
    assert [d.page_content for d in docs] == ["Tokyo Godfathers -> directed_by -> Satoshi Kon"]
    assert docs[0].metadata["head"] == "Tokyo Godfathers" and docs[0].metadata["rank"] == 0
    assert docs[0].metadata["method"] == "neighbours"
    batch = retriever.batch(["Paprika?", "Sapporo?"])
    assert [len(b) for b in batch] == [1, 1]
    adocs = asyncio.run(retriever.ainvoke("Paprika"))
    assert isinstance(adocs[0], Document)
    # stable ids: a hash of method and text, the same on every call and in LlamaIndex
    assert adocs[0].id == retriever.invoke("Paprika")[0].id and len(adocs[0].id) == 40
    assert adocs[0].id == LIRetriever(method).retrieve("Paprika")[0].node.node_id


def test_langchain_retriever_k_caps_documents(method):
    question = "Tokyo Godfathers and Paprika"
    everything = LCRetriever(method=method, k=None).invoke(question)
    assert len(everything) == 3
    assert [d.page_content for d in LCRetriever(method=method, k=1).invoke(question)] == [
        everything[0].page_content]
    with pytest.raises(ValueError):
        LCRetriever(method=method, k=-1)


def test_retriever_keeps_no_last_result_and_repr_is_small(method):
    retriever = LCRetriever(method=method)
    retriever.invoke("Paprika")
    assert not hasattr(retriever, "last_result")  # not safe under concurrency: removed
    assert len(repr(retriever)) < 200
    assert retriever.retrieve_result("Paprika").items


def test_langchain_search_tool_returns_facts(method):
    tool = LCRetriever(method=method).as_search_tool(name="kg", description="facts")
    out = tool.invoke({"query": "Where was Satoshi Kon born?"})
    assert "Satoshi Kon -> born_in -> Sapporo" in out
    schema = tool.args_schema.model_json_schema()
    assert schema["required"] == ["query"] and "question" in schema["properties"]["query"][
        "description"]


def test_runnable_as_tool_is_the_inherited_one(method):
    """``as_tool`` is LangChain's own (``args_schema=`` works), not a different signature."""
    from langchain_core.runnables import Runnable
    from pydantic import BaseModel, Field

    class Ask(BaseModel):
        query: str = Field(description="the question")

    retriever = LCRetriever(method=method)
    assert type(retriever).as_tool is Runnable.as_tool
    with pytest.warns(Warning):  # LangChain marks Runnable.as_tool beta
        tool = retriever.as_tool(name="kg", description="facts")
    docs = tool.invoke("Where was Satoshi Kon born?")
    assert "Satoshi Kon -> born_in -> Sapporo" in [d.page_content for d in docs]
    typed = retriever.as_tool(args_schema=Ask, name="kg2", description="facts")
    assert typed.args_schema.model_json_schema()["properties"]["query"]["description"] == \
        "the question"


def test_paths_carry_provenance(method):
    docs = LCRetriever(method=method).invoke("Tokyo Godfathers and Paprika")
    paths = [d for d in docs if d.metadata["kgrag_type"] == "path"]
    full = unflatten(paths[0].metadata)
    assert paths and full["nodes"] == ["Tokyo Godfathers", "Satoshi Kon", "Paprika"]
    assert full["forward"] == [True, False]
    # flat, primitive metadata only (vector stores and metadata filters accept it)
    for doc in docs:
        assert all(isinstance(v, (str, int, float, bool, type(None)))
                   for v in doc.metadata.values()), doc.metadata
    assert json.loads(paths[0].metadata["provenance"])["relations"] == ["directed_by",
                                                                         "directed_by"]
    assert paths[0].page_content == (
        "Tokyo Godfathers -> directed_by -> Satoshi Kon <- directed_by <- Paprika")


def test_llamaindex_retriever_and_query_engine(method):
    retriever = LIRetriever(method)
    assert isinstance(retriever, LIBaseRetriever)
    nodes = retriever.retrieve("Who directed Paprika?")
    assert isinstance(nodes[0], NodeWithScore) and nodes[0].score == 1.0
    assert nodes[0].node.metadata["tail"] == "Satoshi Kon"
    again = asyncio.run(retriever.aretrieve("Who directed Paprika?"))
    assert again[0].node.node_id == nodes[0].node.node_id  # stable ids
    engine = KGQueryEngine(method=method)
    response = engine.query("Who directed Paprika?")
    assert str(response) == "Satoshi Kon"
    assert response.metadata["answers"] == ["Satoshi Kon"]
    assert len(response.source_nodes) == 1


def test_path_type_validates():
    with pytest.raises(ValueError):
        Path(("a", "b"), ("r", "s"))
