"""UltRAG's two agent tools, named and described so an agent cannot mix them up.

* the **question tool** (``knowledge_graph_answer_question``; the registry's ``tool_name``,
  ``as_search_tool`` / ``as_tool`` in the adapters): its input is a question in plain words;
  UltRAG's LLM writes the logical query itself;
* the **query tool** (``knowledge_graph_execute_logical_query``; ``as_query_tool`` in both
  adapters): its input is a query the agent has already written in UltRAG's DSL; no LLM call.

Each description says what its input is, what it is not, and names the other tool. The query
tool answers in text (:func:`query_tool_text`): one line per entity with its score and whether
the graph proves it or the neural executor guessed it, and why fewer entities than asked came.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kgrag.context.types import RetrievalResult, ScoredEntity
from kgrag.errors import KgragError

if TYPE_CHECKING:
    from kgrag.methods.ultrag.pipeline import UltRAG

#: How an UltRAG logical query is written (the query tool's argument description).
QUERY_DESCRIPTION = (
    "A logical query in UltRAG's DSL. A leaf is an entity name in double quotes; "
    "X -> rel follows relation rel from every entity of X, X -> rel_inv follows it backwards "
    "(tail to head); projections chain left to right (X -> r1 -> r2); AND(A, B, ...) keeps the "
    "entities answering all of A, B, .... Relations are written by name (or id such as P3), "
    "e.g. '\"Satoshi Kon\" -> directed_by_inv' or "
    "'AND(\"Turing Award\" -> award_received_inv, \"deep learning\" -> field_of_work_inv) "
    "-> employer'.")

#: the question tool's name (kept in step with the registry's entry for "ultrag")
QUESTION_TOOL_NAME = "knowledge_graph_answer_question"
#: the query tool's name
QUERY_TOOL_NAME = "knowledge_graph_execute_logical_query"
QUERY_TOOL_DESCRIPTION = (
    "Execute a logical query YOU have already written in UltRAG's query language over the "
    "whole knowledge graph (no LLM involved). Input: the query, e.g. "
    "'AND(\"Japan\" -> country_of_inv, \"Animation\" -> has_genre_inv) -> directed_by' -- not "
    "a question in words (for a plain question use " + QUESTION_TOOL_NAME + "). Output: "
    "entities with scores, best first, each marked 'proved' (the graph has the facts) or "
    "'guess' (the neural executor's estimate where the graph has no answer).")


def entity_line(item: ScoredEntity) -> str:
    """``"Paprika (1.000, proved)"``: the entity, its score and where it comes from."""
    source = item.metadata.get("source")
    tag = {"exact": "proved", "neural": "guess"}.get(str(source), "")
    return f"{item.name} ({item.score:.3f}{', ' + tag if tag else ''})"


def run_query_tool(method: UltRAG, query: str, question: str, k: int | None) -> str:
    """What both adapters' query tools answer: the entities ``query`` (a logical query in
    UltRAG's DSL) scores, or ``"Error: ..."`` saying why a malformed query was refused, so the
    agent can correct it instead of the tool call failing."""
    try:
        result = method.retrieve_query(query, question)
    except (KgragError, ValueError) as exc:
        return f"Error: {exc}"
    return query_tool_text(result, k)


def query_tool_text(result: RetrievalResult, k: int | None) -> str:
    """The query tool's answer: one line per entity (at most ``k``), then why there are fewer
    than ``k`` when there are."""
    items: Sequence[ScoredEntity] = [e for e in result.items if isinstance(e, ScoredEntity)]
    shown = list(items if k is None else items[:k])
    if not shown:
        return "No entity matches the query." + _why_fewer(result, 0)
    text = "\n".join(entity_line(e) for e in shown)
    if k is not None and len(shown) < k:
        text += "\n" + _why_fewer(result, len(shown)).strip()
    return text


def _why_fewer(result: RetrievalResult, shown: int) -> str:
    meta = result.metadata
    cut = meta.get("below_min_membership", 0)
    executor = meta.get("executor") or {}
    if executor.get("kind") == "hybrid" and not executor.get("neural") and not cut:
        return (f" (the graph proves {executor.get('exact_answers')} and every step of the "
                "query has facts, so no neural guesses were added.)")
    support = meta.get("support_size")
    if cut:
        return (f" ({shown} shown: {cut} more scored below min_membership="
                f"{meta.get('min_membership')}.)")
    if support is not None:
        return f" (only {support} entit{'y' if support == 1 else 'ies'} scored above 0.)"
    return ""
