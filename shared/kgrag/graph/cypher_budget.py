"""Budgets for untrusted Cypher: a row cap injected into the query, and no unbounded generators.

A read-only query can still hurt a database server: ``MATCH (a), (b), (c) RETURN a, b, c`` returns
the cube of the graph, and FalkorDB checks its query timeout only *between* operations, so one
expression that builds a huge list (``range(1, 10^9)``, a ``reduce`` that doubles a list) runs to
the end, whatever the timeout, and holds one of the server's few query threads while it does.
:func:`prepare_untrusted_query` therefore, after :func:`~kgrag.graph.cypher_safety.check_read_only`:

* **refuses generators it cannot bound**: every ``range()`` needs integer literal (or integer
  parameter) bounds, and the product of all ``range()`` lengths in the query must stay within
  ``max_range`` (default 100,000 elements; nested comprehensions multiply); ``reduce()`` is
  refused outright (its accumulator can grow exponentially: ``reduce(s = [0], x IN range(1, 30)
  | s + s)`` builds 2^30 elements in one expression);
* **caps the rows server-side** by injecting ``LIMIT`` at the end of the final ``RETURN`` of every
  ``UNION`` branch (``max_rows + 1`` rows, so the caller can tell that rows were cut); a ``LIMIT``
  the query already has is lowered to the cap (an integer literal or an integer parameter;
  another expression is refused).

The time budget is the store's: Neo4j's transaction timeout, FalkorDB's per-query ``TIMEOUT``
(and on FalkorDB's Bolt endpoint, which ignores transaction timeouts, the server's
``TIMEOUT_MAX`` / ``TIMEOUT_DEFAULT`` settings; see docs/graph-databases.md).

Every refusal is a :class:`~kgrag.errors.QueryBudgetError` whose message tells an LLM how to
rewrite the query (ByoKG-RAG feeds it back as the query's error line).

>>> prepare_untrusted_query("MATCH (n) RETURN n.name AS name ORDER BY name", max_rows=10)
'MATCH (n) RETURN n.name AS name ORDER BY name LIMIT 11'
>>> prepare_untrusted_query("UNWIND range(1, 5) AS x RETURN x LIMIT 3", max_rows=10)
'UNWIND range(1, 5) AS x RETURN x LIMIT 3'
"""

from __future__ import annotations

from typing import Any, Mapping

from kgrag.errors import QueryBudgetError
from kgrag.graph.cypher_safety import Token, check_read_only, code_tokens, tokenize_cypher

#: Default cap on the elements all ``range()`` calls of one query may generate together.
MAX_RANGE_ELEMENTS = 100_000

_OPEN, _CLOSE = "([{", ")]}"


def _is_name_position(code: list[Token], k: int) -> bool:
    """``code[k]`` follows ``AS``, ``.`` or is otherwise read as a name, not a keyword/function."""
    if k == 0:
        return False
    prev = code[k - 1]
    return prev.text == "." or (prev.kind == "word" and prev.text.upper() == "AS")


def _int_value(tokens: list[Token], params: Mapping[str, Any]) -> int | None:
    """An integer from ``[-]<digits>`` or ``$param`` holding an int; ``None`` otherwise."""
    sign = 1
    if len(tokens) == 2 and tokens[0].text in "+-" and tokens[0].kind == "punct":
        sign, tokens = (-1 if tokens[0].text == "-" else 1), tokens[1:]
    if len(tokens) != 1:
        return None
    tok = tokens[0]
    if tok.kind == "number" and tok.text.isdigit() and len(tok.text) <= 18:
        return sign * int(tok.text)
    if tok.kind == "param":
        value = params.get(tok.text[1:].strip("`"))
        if isinstance(value, int) and not isinstance(value, bool):
            return sign * value
    return None


def _call_arguments(code: list[Token], open_at: int) -> tuple[list[list[Token]], int]:
    """Top-level comma-separated arguments of the call whose ``(`` is ``code[open_at]``."""
    args: list[list[Token]] = [[]]
    depth = 0
    k = open_at
    while k < len(code):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
            if depth > 1:
                args[-1].append(tok)
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
            if depth == 0:
                return args, k
            args[-1].append(tok)
        elif tok.kind == "punct" and tok.text == "," and depth == 1:
            args.append([])
        elif k > open_at:
            args[-1].append(tok)
        k += 1
    return args, k


def _range_length(args: list[list[Token]], params: Mapping[str, Any]) -> int:
    if len(args) not in (2, 3):
        raise QueryBudgetError("range() takes a start, an end and an optional step")
    values = [_int_value(a, params) for a in args]
    if any(v is None for v in values):
        raise QueryBudgetError(
            "refused Cypher budget: range() bounds must be integer literals or integer "
            "parameters (an unbounded range() runs past the server's timeout); use UNWIND over "
            "matched data or small literal bounds")
    ints = [v for v in values if v is not None]  # all of them (checked above)
    start, end = ints[0], ints[1]
    step = ints[2] if len(ints) == 3 else 1
    if step == 0:
        raise QueryBudgetError("refused Cypher budget: range() step 0")
    return max(0, (end - start) // step + 1)


def check_generators(code: list[Token], params: Mapping[str, Any] | None = None, *,
                     max_range: int = MAX_RANGE_ELEMENTS) -> int:
    """Refuse ``reduce()`` and unbounded or too large ``range()``; return the range elements."""
    params = params or {}
    total = 1
    found = False
    for k, tok in enumerate(code):
        if tok.kind != "word" or k + 1 >= len(code) or code[k + 1].text != "(":
            continue
        if _is_name_position(code, k):
            continue
        name = tok.text.lower()
        if name == "reduce":
            raise QueryBudgetError(
                "refused Cypher budget: reduce() is not allowed (its accumulator can grow "
                "without bound inside one expression, past the server's timeout); use "
                "aggregation such as sum(), collect() or size() instead")
        if name == "range":
            args, _ = _call_arguments(code, k + 1)
            total *= max(1, _range_length(args, params))
            found = True
            if total > max_range:
                raise QueryBudgetError(
                    f"refused Cypher budget: range() calls would generate {total:,}+ elements "
                    f"(at most {max_range:,} per query); use smaller bounds")
    return total if found else 0


def _branches(code: list[Token]) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of the top-level ``UNION`` branches."""
    out: list[tuple[int, int]] = []
    depth, start = 0, 0
    for k, tok in enumerate(code):
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and tok.kind == "word" and tok.text.upper() == "UNION" \
                and not _is_name_position(code, k):
            out.append((start, k))
            start = k + 2 if k + 1 < len(code) and code[k + 1].text.upper() == "ALL" else k + 1
    out.append((start, len(code)))
    return out


def _top_level_words(code: list[Token], lo: int, hi: int, word: str) -> list[int]:
    depth, found = 0, []
    for k in range(lo, hi):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and tok.kind == "word" and tok.text.upper() == word \
                and not _is_name_position(code, k):
            found.append(k)
    return found


def cap_rows(query: str, code: list[Token], cap: int,
             params: Mapping[str, Any] | None = None) -> str:
    """``query`` with ``LIMIT cap`` on each branch's final ``RETURN`` (an existing one lowered)."""
    params = params or {}
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) on the query text
    for lo, hi in _branches(code):
        if lo >= hi:
            continue
        returns = _top_level_words(code, lo, hi, "RETURN")
        if not returns:
            continue
        limits = _top_level_words(code, returns[-1], hi, "LIMIT")
        if limits:
            expr = code[limits[-1] + 1:hi]
            value = _int_value(expr, params)
            if value is None:
                raise QueryBudgetError(
                    "refused Cypher budget: LIMIT must be an integer literal or an integer "
                    "parameter")
            if not expr or value > cap:
                edits.append((expr[0].start, expr[-1].end, str(cap)))
        else:
            end = code[hi - 1].end
            edits.append((end, end, f" LIMIT {cap}"))
    for start, end, text in sorted(edits, reverse=True):
        query = query[:start] + text + query[end:]
    return query


def prepare_untrusted_query(query: str, params: Mapping[str, Any] | None = None, *,
                            max_rows: int = 100, max_range: int = MAX_RANGE_ELEMENTS) -> str:
    """The text to send for untrusted ``query``: checked read-only, generators bounded, rows capped.

    The server returns at most ``max_rows + 1`` rows (one more than wanted, so a caller can tell
    the result was cut). Raises :class:`~kgrag.errors.UnsafeQueryError` (writes, procedures) or
    its subclass :class:`~kgrag.errors.QueryBudgetError` (budgets).
    """
    if max_rows < 1:
        raise ValueError("max_rows must be >= 1")
    text = check_read_only(query)
    code = code_tokens(tokenize_cypher(text))
    check_generators(code, params, max_range=max_range)
    return cap_rows(text, code, max_rows + 1, params)
