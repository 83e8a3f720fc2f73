"""Argument schemas for kgrag's LangChain tools: pydantic models whose fields are described,
so an agent (and ``tool.args_schema.model_json_schema()``) sees what each argument means."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

#: How a SimGRAG pattern is written (the pattern tool's argument description).
PATTERN_DESCRIPTION = (
    "The pattern graph to match, as a list of [head, relation, tail] triples of strings, e.g. "
    "[[\"Paprika\", \"directed by\", \"UNKNOWN person 1\"]]. Name known entities and relations "
    "as the question does; write an unknown one as 'UNKNOWN <type> <number>' (e.g. 'UNKNOWN "
    "film 1', 'UNKNOWN relation 1') and reuse the same placeholder for the same thing.")

#: How an UltRAG logical query is written (the query tool's argument description).
QUERY_DESCRIPTION = (
    "A logical query in UltRAG's DSL. A leaf is an entity name in double quotes; "
    "X -> rel follows relation rel from every entity of X, X -> rel_inv follows it backwards "
    "(tail to head); projections chain left to right (X -> r1 -> r2); AND(A, B, ...) keeps the "
    "entities answering all of A, B, .... Relations are written by name (or id such as P3), "
    "e.g. '\"Satoshi Kon\" -> directed_by_inv' or "
    "'AND(\"Turing Award\" -> award_received_inv, \"deep learning\" -> field_of_work_inv) "
    "-> employer'.")


def args_model(name: str, args: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model named ``name`` from ``{arg: ToolArg}`` (type, description, default)."""
    fields = {arg: (spec.type, Field(spec.default, description=spec.description))
              for arg, spec in args.items()}
    return create_model(name, **fields)  # type: ignore[call-overload]


class PatternInput(BaseModel):
    """Arguments of SimGRAG's pattern tool."""

    triples: list[list[str]] = Field(description=PATTERN_DESCRIPTION, min_length=1)
    question: str = Field("", description="The question the pattern was written for "
                                          "(optional; kept in the results' provenance).")


class LogicalQueryInput(BaseModel):
    """Arguments of UltRAG's logical-query tool."""

    query: str = Field(description=QUERY_DESCRIPTION)
    question: str = Field("", description="The question the query answers (optional; kept "
                                          "in the results' provenance).")
