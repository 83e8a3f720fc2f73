"""KET-RAG through LangChain and LlamaIndex: real retriever / query-engine classes, fake LLMs."""

from __future__ import annotations

import asyncio

import pytest
from ketrag_fakes import (
    HashingEmbedder,
    RecordChatModel,
    RecordLlamaLLM,
    RecordResponder,
    chain_answer,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from llama_index.core import Document as LlamaDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeWithScore
from test_ketrag_index import CITY_DOCS, SMALL

from kgrag.context.metadata import unflatten
from kgrag.text import count_tokens
from langchain_kgrag.ketrag import KETRAGRetriever as LCKETRAGRetriever
from llama_index_kgrag.ketrag import KETRAGQueryEngine
from llama_index_kgrag.ketrag import KETRAGRetriever as LIKETRAGRetriever

QUESTION = "Which country was Ada Lovelace born in?"


def test_langchain_retriever_returns_documents_with_channel_metadata(tmp_path):
    responder = RecordResponder()
    docs = [Document(page_content=t, metadata={"source": f"city{i}"}) for i,
            t in enumerate(CITY_DOCS)]
    retriever = LCKETRAGRetriever.from_documents(docs, llm=RecordChatModel(responder=responder),
                                                 embedder=HashingEmbedder(), budget=0.5,
                                                 context_tokens=400, **SMALL)
    assert isinstance(retriever, LCBaseRetriever)
    calls_after_indexing = len(responder.calls)
    assert responder.kinds()["extract"] == 5
    out = retriever.invoke(QUESTION)
    assert len(responder.calls) == calls_after_indexing  # retrieval makes no LLM call
    assert out and all(isinstance(d, Document) for d in out)
    channels = {d.metadata["channel"] for d in out}
    assert channels == {"entity", "keyword"}
    for d in out:
        assert {"channel", "score", "tokens", "source_ids", "kind"} <= set(unflatten(d.metadata))
        assert d.metadata["method"] == "ketrag"
    texts = [unflatten(d.metadata) for d in out if d.metadata["kind"] == "text"]
    assert all(d["source_ids"] == [d["chunk_id"]] for d in texts)
    assert {d["doc_metadata"]["source"] for d in texts} <= {f"city{i}" for i in range(10)}
    assert sum(d.metadata["tokens"] for d in out) <= 400
    assert retriever.retrieve_result(QUESTION).metadata["context"]
    # the tool wraps the same retriever
    tool = retriever.as_search_tool()
    assert tool.name == "document_graph_search"
    assert "Lindenfeld" in tool.invoke(QUESTION)
    # answer: exactly one more LLM call, whose prompt holds the retrieved context
    answer = retriever.answer(QUESTION)
    assert len(responder.calls) == calls_after_indexing + 1
    kind, prompt = responder.calls[-1]
    assert kind == "answer" and answer.retrieval.metadata["context"] in prompt
    assert answer.answers == [chain_answer(QUESTION, answer.retrieval.metadata["context"])]
    assert answer.text and answer.retrieval.usage.calls == 1
    # persistence through the adapter
    retriever.method.save(tmp_path / "idx")
    again = LCKETRAGRetriever.load(tmp_path / "idx", embedder=HashingEmbedder(), context_tokens=400)
    assert [d.page_content for d in again.invoke(QUESTION)] == [d.page_content for d in out]


def test_langchain_retriever_async_and_llm_free():
    retriever = LCKETRAGRetriever.from_documents(CITY_DOCS, embedder=HashingEmbedder(), budget=0,
                                                 **SMALL)
    out = asyncio.run(retriever.ainvoke("Where was Bruno Keller born?"))
    assert out and {d.metadata["channel"] for d in out} == {"keyword"}
    assert "Ostbruck" in out[0].page_content


def test_llamaindex_retriever_and_query_engine():
    responder = RecordResponder()
    llm = RecordLlamaLLM(responder=responder)
    docs = [LlamaDocument(text=t, metadata={"n": i}) for i, t in enumerate(CITY_DOCS)]
    retriever = LIKETRAGRetriever.from_documents(docs, llm=llm, embedder=HashingEmbedder(),
                                                 budget=0.5, context_tokens=400, **SMALL)
    assert isinstance(retriever, LIBaseRetriever)
    nodes = retriever.retrieve(QUESTION)
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    assert {n.node.metadata["channel"] for n in nodes} == {"entity", "keyword"}
    assert count_tokens("\n".join(n.node.get_content() for n in nodes)) <= 400
    engine = KETRAGQueryEngine(method=retriever.method)
    before = len(responder.calls)
    response = engine.query(QUESTION)
    context = retriever.method.retrieve(QUESTION).metadata["context"]
    assert str(response) == chain_answer(QUESTION, context)
    assert responder.calls[-1][0] == "answer" and context in responder.calls[-1][1]
    assert len(responder.calls) == before + 1 and response.metadata["usage"]["calls"] == 1
    assert response.source_nodes and response.metadata["method"] == "ketrag"
    aresponse = asyncio.run(engine.aquery(QUESTION))
    assert str(aresponse) == str(response) and len(responder.calls) == before + 2


def test_llamaindex_built_from_a_vector_store_index():
    docs = [LlamaDocument(text=t) for t in CITY_DOCS]
    vindex = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
    engine = KETRAGQueryEngine.from_vector_store_index(
        vindex, llm=RecordLlamaLLM(responder=RecordResponder()), embedder=HashingEmbedder(),
        budget=0.5, **SMALL)
    assert engine.method.index.num_chunks == len(CITY_DOCS)
    refs = {d["metadata"]["ref_doc_id"] for d in engine.method.index.documents}
    assert refs == {d.doc_id for d in docs}
    response = engine.query(QUESTION)
    assert str(response) and response.source_nodes
    retriever = LIKETRAGRetriever.from_vector_store_index(vindex, embedder=HashingEmbedder(),
                                                          budget=0, **SMALL)
    assert retriever.retrieve("Where was Bruno Keller born?")
    with pytest.raises(ValueError, match="docstore"):
        LIKETRAGRetriever.from_vector_store_index(object(), embedder=HashingEmbedder(), budget=0)


def test_from_vector_store_index_takes_llm_by_keyword_only():
    import warnings

    vindex = VectorStoreIndex.from_documents([LlamaDocument(text=t) for t in CITY_DOCS],
                                             embed_model=MockEmbedding(embed_dim=8))
    llm = RecordLlamaLLM(responder=RecordResponder())
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        by_keyword = KETRAGQueryEngine.from_vector_store_index(
            vindex, llm=llm, embedder=HashingEmbedder(), budget=0, **SMALL)
    assert by_keyword.method.llm is not None and by_keyword.method.index.num_chunks
    with pytest.raises(TypeError, match="positional"):
        KETRAGQueryEngine.from_vector_store_index(vindex, llm, HashingEmbedder(), budget=0,
                                                  **SMALL)
    with pytest.raises(TypeError, match="positional"):
        LIKETRAGRetriever.from_vector_store_index(vindex, None, HashingEmbedder(), budget=0,
                                                  **SMALL)
