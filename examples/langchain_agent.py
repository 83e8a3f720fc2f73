"""LangGraph: a tool-calling agent that explores the knowledge graph with kgrag's toolkit.

The graph is the classic agent loop: the model either calls tools (``ToolNode`` runs them and
feeds the results back) or answers. The tools come from ``KGToolkit`` (ByoKG-RAG's graph tools:
entity lookup, neighbours, relation-path following, shortest path). Run::

    python examples/langchain_agent.py

Needs ``langgraph`` (``pip install "kgrag[examples]"``). The agent's model here is a scripted
stand-in that emits the tool calls a model would make (``scripted_llms.py``); replace it with
your own tool-calling chat model, e.g. ``ChatOpenAI(model="gpt-4o-mini")``. The tool results
printed are real: they come from the graph.
"""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag.graph import read_triples
from langchain_kgrag import KGToolkit

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Where was the director of Tokyo Godfathers born?"
SYSTEM = ("You answer questions about films from a knowledge graph. Look entities up first, "
          "then follow relations; answer only from tool results.")


def scripted_agent_model():
    """The tool calls (and final answer) a tool-calling model would make for QUESTION."""
    return scripted_chat(
        AIMessage(content="", tool_calls=[{
            "name": "kg_lookup_entity", "args": {"name": "tokyo godfathers"}, "id": "call_1"}]),
        AIMessage(content="", tool_calls=[{
            "name": "kg_follow_path",
            "args": {"entity": "Tokyo Godfathers", "path": "directed_by -> born_in"},
            "id": "call_2"}]),
        "Tokyo Godfathers was directed by Satoshi Kon, who was born in Sapporo.",
    )


def build_agent(tools, model):
    """A LangGraph ``StateGraph``: agent -> (tools -> agent)* -> end."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)  # tool calls -> "tools", else end
    graph.add_edge("tools", "agent")
    return graph.compile()


def main(question: str = QUESTION) -> list:
    kg = read_triples(DATA)
    tools = KGToolkit.from_graph(kg).get_tools()
    agent = build_agent(tools, scripted_agent_model())  # replace with your own chat model
    state = agent.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": 10})

    print(f"Question: {question}")
    print(f"Tools: {', '.join(tool.name for tool in tools)}")
    for message in state["messages"][1:]:
        if isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"-> {call['name']}({call['args']})")
        elif isinstance(message, ToolMessage):
            print("   " + str(message.content).replace("\n", "\n   "))
        elif isinstance(message, AIMessage):
            print(f"Answer: {message.content}")
    return state["messages"]


if __name__ == "__main__":
    main(*sys.argv[1:2])
