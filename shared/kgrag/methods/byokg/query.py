"""Graph-query retrieval (paper §3.4): run the KG-Linker's openCypher, read-only, errors as text.

``Execute-Query(Q, G)`` runs only on stores with ``supports_cypher`` (Neo4j, FalkorDB, ...).
LLM-written Cypher is untrusted: :func:`kgrag.graph.cypher.safety.check_read_only` refuses write,
procedure and admin clauses *before* anything is sent (the stores additionally run queries in
read transactions), and every failure -- refused, syntax error, timeout -- becomes an error line
in the graph context so the next KG-Linker iteration can correct the query (the paper leaves
errors unspecified; the reference code feeds them back, which we keep). Budget breaches are fed
back the same way: a query refused by :mod:`kgrag.graph.cypher.budget` (unbounded ``range()``,
``reduce()``), one that ran out of time, and one whose rows were cut at the store's row cap
(the result line says so and asks for a more selective query).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kgrag.errors import QueryTimeoutError, UnsafeQueryError
from kgrag.graph.base import GraphStore, runs_cypher
from kgrag.graph.cypher.safety import check_read_only
from kgrag.graph.cypher.store import CypherRows

__all__ = ["MAX_CHARS", "MAX_ROWS", "QueryResult", "check_read_only", "execute_query"]

#: Cap on rows and characters of one verbalised result (the paper has no context pruning; a
#: runaway ``MATCH (n) RETURN n`` must not flood the prompt).
MAX_ROWS = 50
MAX_CHARS = 4000


@dataclass
class QueryResult:
    """One executed (or refused / failed) query and its verbalisation for the context."""

    query: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    #: the store cut the rows at its row cap (the query matched more)
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return not self.error

    def verbalize(self) -> str:
        if self.error:
            return f"Graph query: {self.query}\nError: {self.error}"
        shown = self.rows[:MAX_ROWS]
        body = json.dumps(shown, default=str, ensure_ascii=False)
        if len(body) > MAX_CHARS:
            body = body[:MAX_CHARS] + " ..."
        more = f" (first {MAX_ROWS} of {len(self.rows)} rows)" if len(self.rows) > MAX_ROWS else ""
        if self.truncated:
            more += (f" (cut at the row budget of {len(self.rows)} rows: the query matched more; "
                     "aggregate, filter or add LIMIT)")
        return f"Graph query: {self.query}\nResult{more}: {body}"


def execute_query(store: GraphStore, query: str) -> QueryResult:
    """Run ``query`` read-only on ``store``; never raises (errors are in the result)."""
    if not runs_cypher(store):
        return QueryResult(query, error="this graph store cannot run openCypher")
    try:
        safe = check_read_only(query)
    except UnsafeQueryError as exc:
        return QueryResult(query, error=str(exc))
    try:
        rows = store.run_cypher(safe)
    except UnsafeQueryError as exc:  # a budget refusal (QueryBudgetError) from the store
        return QueryResult(safe, error=str(exc))
    except QueryTimeoutError as exc:
        return QueryResult(safe, error=f"the query exceeded its time budget ({str(exc)[:300]}); "
                                       "write a more selective query")
    except Exception as exc:  # the database's own error text is what the LLM needs to see
        return QueryResult(safe, error=f"{type(exc).__name__}: {str(exc)[:500]}")
    return QueryResult(safe, rows=[_row_dict(r) for r in (rows or [])],
                       truncated=isinstance(rows, CypherRows) and rows.truncated)


def _row_dict(row: Any) -> dict[str, Any]:
    if isinstance(row, dict):
        return row
    if hasattr(row, "data"):  # neo4j.Record
        try:
            return dict(row.data())
        except Exception:  # pragma: no cover - defensive
            pass
    if isinstance(row, (list, tuple)):
        return {str(i): v for i, v in enumerate(row)}
    return {"value": row}
