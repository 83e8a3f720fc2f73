"""LlamaIndex: a ReAct agent with a kgrag ``RetrieverTool`` and the graph tools.

The agent (``llama_index.core.agent.workflow.ReActAgent``) can call

* ``movie_graph_search`` -- a ``RetrieverTool`` over GraphRAFT's retriever (LLM-free mode:
  candidate graph queries around the question's entities, chosen by embedding similarity);
* ``kg_lookup_entity``, ``kg_neighbors``, ``kg_follow_path``, ``kg_shortest_path`` -- ByoKG-RAG's
  graph tools as ``FunctionTool`` s (``llama_index_kgrag.graph_tools``).

Run::

    python examples/llamaindex_agent.py

The agent's LLM is a scripted stand-in replaying ReAct steps (``scripted_llms.py``); replace it
with your own LlamaIndex LLM, e.g. ``OpenAI(model="gpt-4o-mini")`` (a function-calling LLM can
use ``FunctionAgent`` with the same tools). The tool results printed are real.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from llama_index.core.agent.workflow import ReActAgent, ToolCallResult
from llama_index.core.tools import RetrieverTool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_llama

from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from llama_index_kgrag import GraphRAFTRetriever, graph_tools

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Where was the director of Tokyo Godfathers born?"


def scripted_react_llm():
    """The ReAct steps a model would write for QUESTION (Thought / Action / Answer)."""
    return scripted_llama(
        "Thought: I should search the knowledge graph for this question first.\n"
        "Action: movie_graph_search\n"
        'Action Input: {"input": "Where was the director of Tokyo Godfathers born?"}',
        "Thought: The search suggests Sapporo; let me check: director, then birthplace.\n"
        "Action: kg_follow_path\n"
        'Action Input: {"entity": "Tokyo Godfathers", "path": "directed_by -> born_in"}',
        "Thought: I can answer without using any more tools.\n"
        "Answer: Tokyo Godfathers was directed by Satoshi Kon, who was born in Sapporo.",
    )


async def run_agent(question: str, embedder) -> tuple[str, list]:
    kg = read_triples(DATA)
    search = RetrieverTool.from_defaults(
        retriever=GraphRAFTRetriever.from_graph(kg, embedder=embedder, top_k=5),
        name="movie_graph_search",
        description="Search the film knowledge graph with a natural-language question; "
                    "returns the entities the best matching graph queries yield.")
    agent = ReActAgent(tools=[search, *graph_tools(kg)],
                       llm=scripted_react_llm())  # replace with your own LLM
    handler = agent.run(user_msg=question)
    calls = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            calls.append(event)
    result = await handler
    return str(result), calls


def main(question: str = QUESTION, embedder=None) -> dict:
    answer, calls = asyncio.run(run_agent(question, embedder or default_embedder()))
    print(f"Question: {question}")
    for call in calls:
        print(f"-> {call.tool_name}({call.tool_kwargs})")
        lines = [line for line in str(call.tool_output).splitlines() if line.strip()]
        print("   " + "\n   ".join(lines))
    print(f"Answer: {answer}")
    return {"answer": answer, "tool_outputs": {c.tool_name: str(c.tool_output) for c in calls}}


if __name__ == "__main__":
    main(*sys.argv[1:2])
