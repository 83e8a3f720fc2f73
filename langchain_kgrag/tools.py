"""Argument schemas for kgrag's LangChain tools: pydantic models whose fields are described,
so an agent (and ``tool.args_schema.model_json_schema()``) sees what each argument means."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from kgrag.methods.ultrag.tools import QUERY_DESCRIPTION as QUERY_DESCRIPTION

#: How a SimGRAG pattern is written (the pattern tool's argument description).
PATTERN_DESCRIPTION = (
    "The pattern graph to match, as a list of [head, relation, tail] triples of strings, e.g. "
    "[[\"Paprika\", \"directed by\", \"UNKNOWN person 1\"]]. Name known entities and relations "
    "as the question does; write an unknown one as 'UNKNOWN <type> <number>' (e.g. 'UNKNOWN "
    "film 1', 'UNKNOWN relation 1') and reuse the same placeholder for the same thing.")

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
