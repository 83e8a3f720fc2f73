"""LangChain: tracing, per-question usage, streaming and prompt overrides with a kgrag retriever.

1. **Tracing.** A callback handler passed in ``config`` sees the retriever run and, nested in
   it, the chat model run UltRAG makes to write its logical query -- the tree LangSmith or any
   tracer shows. (Without nesting, the LLM call would be a separate, orphan run.)
2. **Usage per question.** Every ``Document`` carries the question's LLM usage (``usage_*``)
   and the method's provenance (``retrieval``, JSON) in flat metadata, so ``batch`` /
   ``abatch`` never mix questions up.
3. **Streaming.** ``retriever.answer_chain()`` is a Runnable: ``stream`` yields the answer
   call's reply piece by piece (``{"delta": ...}``), then the parsed answers with their source
   documents and usage.
4. **Prompt overrides.** ``prompts={"arbitration": ChatPromptTemplate(...)}`` replaces UltRAG's
   answer prompt (system and human message); the chat model receives the new one.

Run::

    python examples/langchain_tracing_streaming.py

Offline, scripted stand-ins play the chat model (``scripted_llms.py``); replace them with your
own, e.g. ``ChatOpenAI(model="gpt-4o-mini")``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.prompts import ChatPromptTemplate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag.context.metadata import unflatten
from kgrag.graph import read_triples
from langchain_kgrag import UltRAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Who directed the Japanese animated films?"
QUERY = '<query>AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by</query>'
ANSWER = ("Both are directors of Japanese animation. "
          "<answers>\nSatoshi Kon\nHayao Miyazaki\n</answers>")

#: UltRAG's answer (arbitration) prompt, replaced: a system and a human message
ARBITRATION = ChatPromptTemplate.from_messages([
    ("system", "You are a film expert. Choose answers only from the candidates."),
    ("human", "Question: {question}\nCandidates (id | name | probability):\n{candidates}\n"
              "Write the answers, one per line, inside <answers></answers>."),
])


class TraceTree(BaseCallbackHandler):
    """Records retriever, chain and chat-model runs with their parents; prints them as a tree."""

    def __init__(self) -> None:
        self.runs: dict[Any, tuple[Any, str]] = {}
        self.prompts: list[str] = []

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):
        self.runs[run_id] = (parent_run_id, f"retriever {kw.get('name') or ''}".strip())

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
        self.runs[run_id] = (parent_run_id, f"chain {kw.get('name') or ''}".strip())

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):
        self.runs[run_id] = (parent_run_id, "chat model")
        self.prompts += ["\n".join(f"[{m.type}] {m.content}" for m in batch) for batch in messages]

    def lines(self, parent: Any = None, depth: int = 0) -> list[str]:
        out = []
        for run_id, (parent_id, label) in self.runs.items():
            if parent_id == parent:
                out.append("  " * depth + label)
                out += self.lines(run_id, depth + 1)
        return out


def main(question: str = QUESTION) -> dict:
    kg = read_triples(DATA)

    # 1-2. tracing and per-question usage
    tree = TraceTree()
    retriever = UltRAGRetriever.from_graph(
        kg, llm=scripted_chat(QUERY),  # replace with your own chat model
        linking="exact", executor="symbolic", k=5)
    docs = retriever.invoke(question, config={"callbacks": [tree]})
    trace = tree.lines()
    print("Trace:")
    print("\n".join("  " + line for line in trace))
    meta = docs[0].metadata
    print(f"Usage of this question: {meta['usage_calls']} LLM call(s); "
          f"query: {unflatten(meta)['retrieval']['query']}")
    for doc in docs:
        print(f"  {doc.page_content}   id={doc.id[:12]}")

    # 3-4. a streamed answer, with the arbitration prompt replaced
    streamed = TraceTree()
    chain = UltRAGRetriever.from_graph(
        kg, llm=scripted_chat(QUERY, ANSWER),  # replace with your own chat model
        linking="exact", executor="symbolic", k=5,
        prompts={"arbitration": ARBITRATION}).answer_chain()
    print("Streamed answer: ", end="")
    pieces, final = [], {}
    for chunk in chain.stream(question, config={"callbacks": [streamed]}):
        if "delta" in chunk:
            pieces.append(chunk["delta"])
            print(chunk["delta"], end="", flush=True)
        else:
            final = chunk
    print(f"\nAnswers: {final['answers']} from {len(final['sources'])} sources, "
          f"{final['usage']['calls']} LLM calls")
    print("The answer model saw:\n  " + streamed.prompts[-1].replace("\n", "\n  "))
    return {"trace": trace, "docs": docs, "pieces": pieces, "final": final,
            "answer_prompt": streamed.prompts[-1]}


if __name__ == "__main__":
    main(*sys.argv[1:2])
