"""LangChain: an LCEL RAG chain over a knowledge graph.

    retriever | format | prompt | chat model | parser

The retriever is UltRAG: an LLM turns the question into a logical query (relation projections and
intersections), which kgrag executes over the whole graph as fuzzy sets; each answer entity
becomes one ``Document``. Run::

    python examples/langchain_lcel_chain.py ["your question"]

Offline, two scripted stand-ins play the LLMs (see ``scripted_llms.py``). Replace them with your
own chat model, e.g. ``ChatOpenAI(model="gpt-4o-mini")``: the query writer then reads UltRAG's
prompt (which lists the graph's relations) and writes the query itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag import KnowledgeGraph
from kgrag.context.metadata import unflatten
from kgrag.graph import read_triples
from langchain_kgrag import UltRAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Who directed the Japanese animated films?"

PROMPT = ChatPromptTemplate.from_messages([
    ("system", ("Answer the question using only the knowledge-graph results below. "
                "Each line is an entity with its membership score in [0, 1].")),
    ("human", "Knowledge-graph results:\n{context}\n\nQuestion: {question}"),
])


def format_docs(docs: list[Document]) -> str:
    return "\n".join(doc.page_content for doc in docs)


class PromptRecorder(BaseCallbackHandler):
    """Keeps the messages each chat model received (to show what the answer model saw) and
    the documents each retriever returned."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.documents: list[list[Document]] = []

    def on_retriever_end(self, documents, **kwargs) -> None:
        self.documents.append(list(documents))

    def on_chat_model_start(self, serialized, messages, **kwargs) -> None:
        self.prompts += ["\n".join(str(m.content) for m in batch) for batch in messages]


def build_chain(kg: KnowledgeGraph, query_writer, chat_model):
    """The LCEL chain; ``query_writer`` writes UltRAG's query, ``chat_model`` answers."""
    # executor="symbolic": exact traversal, so the documents are exactly the answer set (each
    # membership 1.0); drop it for the paper's neural executor (UltraQuery), which scores every
    # entity and leaves the cut to the answering model.
    retriever = UltRAGRetriever.from_graph(kg, llm=query_writer, linking="exact",
                                           executor="symbolic")
    chain = (
        {"context": retriever | RunnableLambda(format_docs), "question": RunnablePassthrough()}
        | PROMPT
        | chat_model
        | StrOutputParser()
    )
    return chain, retriever


def main(question: str = QUESTION) -> dict:
    kg = read_triples(DATA)
    # Replace with your own chat model (both can be the same model).
    query_writer = scripted_chat(
        '<query>AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
        '</query>')
    chat_model = scripted_chat("Satoshi Kon and Hayao Miyazaki directed them.")

    chain, retriever = build_chain(kg, query_writer, chat_model)
    recorder = PromptRecorder()
    answer = chain.invoke(question, config={"callbacks": [recorder]})

    # the retriever's documents carry the query it ran (JSON under "retrieval")
    docs = recorder.documents[-1]
    print(f"Question: {question}")
    print(f"UltRAG query: {unflatten(docs[0].metadata)['retrieval']['query']}")
    print("Retrieved:")
    for doc in docs:
        print(f"  {doc.page_content}")
    print("Prompt the answer model saw:")
    print("  " + recorder.prompts[-1].replace("\n", "\n  "))
    print(f"Answer: {answer}")
    return {"answer": answer, "entities": [d.metadata["entity"] for d in docs],
            "answer_prompt": recorder.prompts[-1]}


if __name__ == "__main__":
    main(*sys.argv[1:2])
