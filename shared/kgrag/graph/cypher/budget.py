"""Budgets for untrusted Cypher: a row cap injected into the query, and bounded expression work.

A read-only query can still hurt a database server: ``MATCH (a), (b), (c) RETURN a, b, c`` returns
the cube of the graph, and FalkorDB checks its query timeout only *between* operations, so one
expression that builds a huge list or string (``range(1, 10^9)``, a ``reduce`` that doubles a
list, comprehensions nested over a collected list, nested ``replace()``) runs to the end, whatever
the timeout, and holds one of the server's few query threads while it does (two 3 kB queries kept
a 2-thread server from answering a trivial read for ~50 s with a 1 s client timeout).
:func:`prepare_untrusted_query` therefore, after
:func:`~kgrag.graph.cypher.safety.check_read_only` (which also caps expression nesting at
:data:`~kgrag.graph.cypher.safety.MAX_NESTING_DEPTH`, because the server's *parser* is exponential
in it), applies a static cost model to every expression (:func:`check_expression_work`):

* **Iterations.** A list comprehension (``[x IN L | ...]``), a pattern comprehension
  (``[(a)-->(b) | ...]``), a quantifier (``any/all/none/single(x IN L ...)``, legacy
  ``extract/filter``), an ``EXISTS/COUNT/COLLECT {...}`` subquery and the membership test ``x IN L``
  each iterate over a list. The list's size is *known* when it is a literal list (its element count,
  at most :data:`MAX_LIST_LITERAL_ELEMENTS`), a ``range()`` call (its length) or a parameter holding
  a list (its length), and *unknown* otherwise (a variable, a ``collect()``ed list, a property, a
  pattern). An iteration inside another one (anywhere within its brackets) multiplies the work.
  Refused: two unknown sizes on one nesting chain (``[a IN L | [b IN L | 1]]``, ``[a IN L WHERE a IN
  L]``, quadratic in a collected list; a variable of the enclosing query named in a comprehension's
  projection, ``[a IN L | M]``, counts as an unknown size: it may copy a list per element), an
  unknown size nested with more than :data:`MAX_KNOWN_WITH_UNKNOWN` literal-list or ``range()``
  elements (``[x IN range(1, 100000) WHERE x IN L]``), known sizes whose product exceeds
  ``max_range``, more than :data:`MAX_ITERATION_DEPTH` nested iterations, and a body whose text
  times the known sizes of its chain exceeds :data:`MAX_ITERATION_WORK` characters (``[x IN range(1,
  100000) | '...1 kB literal...']``) or, over an unknown size, exceeds
  :data:`MAX_UNKNOWN_BODY_CHARS`.
* **Generators.** Every ``range()`` needs integer literal (or integer parameter) bounds, and the
  product of all ``range()`` lengths in the query must stay within ``max_range`` (default
  100,000 elements); ``reduce()`` is refused outright (its accumulator can grow exponentially:
  ``reduce(s = [0], x IN range(1, 30) | s + s)`` builds 2^30 elements in one expression).
  A backtick-quoted function name (`` `range`(...) ``) is refused by the read-only check, so a
  budgeted function cannot hide behind quoting.
* **String growth.** ``replace(s, search, replacement)`` may not be nested in another
  ``replace()`` (each level multiplies the length: a 3 kB query grew a 100 MB string), its
  replacement must be a string literal or parameter at most :data:`MAX_REPLACE_GROWTH` times as
  long as the search string (an empty search string inserts it at every position).

What the model does not bound: the size of values already stored in the graph (a body that
copies a long property is charged by its text, not the value's size, and ``n.list`` may hold a
long list); the row cap, the server's memory limit and its timeout between operations remain the
bounds there.

It also **caps the rows server-side** by injecting ``LIMIT`` at the end of the final ``RETURN``
of every ``UNION`` branch (``max_rows + 1`` rows, so the caller can tell that rows were cut); a
``LIMIT`` the query already has is lowered to the cap (an integer literal or an integer
parameter; another expression is refused). Clauses are found by the word roles of
:func:`~kgrag.graph.cypher.safety.word_roles`, so an alias named ``as``, ``limit`` or ``union``
neither hides the final ``RETURN`` nor counts as one.

The time budget is the store's: Neo4j's transaction timeout, FalkorDB's per-query ``TIMEOUT``
(and on FalkorDB's Bolt endpoint, which ignores transaction timeouts, the server's
``TIMEOUT_MAX`` / ``TIMEOUT_DEFAULT`` settings; see docs/graph-databases.md).

Every refusal is a :class:`~kgrag.errors.QueryBudgetError` whose message tells an LLM how to
rewrite the query (ByoKG-RAG feeds it back as the query's error line).

>>> prepare_untrusted_query("MATCH (n) RETURN n.name AS name ORDER BY name", max_rows=10)
'MATCH (n) RETURN n.name AS name ORDER BY name LIMIT 11'
>>> prepare_untrusted_query("UNWIND range(1, 5) AS x RETURN x LIMIT 3", max_rows=10)
'UNWIND range(1, 5) AS x RETURN x LIMIT 3'
>>> prepare_untrusted_query("RETURN 1 AS as LIMIT 2", max_rows=10)
'RETURN 1 AS as LIMIT 2'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from kgrag.errors import QueryBudgetError
from kgrag.graph.cypher.safety import (
    Token,
    check_read_only,
    code_tokens,
    tokenize_cypher,
    word_roles,
)

#: Default cap on the elements all ``range()`` calls of one query may generate together, and
#: on the product of the known list sizes along one chain of nested iterations.
MAX_RANGE_ELEMENTS = 100_000
#: Most elements of one literal list (``[1, 2, ...]``).
MAX_LIST_LITERAL_ELEMENTS = 1_000
#: Most iterations (comprehensions, quantifiers, ``IN`` tests, subqueries) nested in each other.
MAX_ITERATION_DEPTH = 3
#: Most characters of iteration-body text times the known list sizes it runs over.
MAX_ITERATION_WORK = 10_000_000
#: Longest iteration body (characters) over a list of unknown size.
MAX_UNKNOWN_BODY_CHARS = 1_000
#: Largest length ratio of ``replace()``'s replacement to its search string.
MAX_REPLACE_GROWTH = 16
#: Most elements of literal lists and ranges nested with one list of unknown size.
MAX_KNOWN_WITH_UNKNOWN = 1_000

_OPEN, _CLOSE = "([{", ")]}"
_QUANTIFIERS = frozenset({"any", "all", "none", "single", "extract", "filter"})
_SUBQUERY_WORDS = frozenset({"EXISTS", "COUNT", "COLLECT"})
#: Words that are values or keywords, never a variable, inside an expression.
_NOT_VARIABLES = frozenset({"TRUE", "FALSE", "NULL", "END", "CASE", "WHEN", "THEN", "ELSE",
                            "AND", "OR", "XOR", "NOT", "IN", "IS", "STARTS", "ENDS", "WITH",
                            "CONTAINS", "WHERE", "DISTINCT"})


def _budget(reason: str) -> QueryBudgetError:
    return QueryBudgetError(f"refused Cypher budget: {reason}")


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


def _str_length(tokens: list[Token], params: Mapping[str, Any]) -> int | None:
    """Length of a string literal or string parameter ``tokens``; ``None`` otherwise."""
    if len(tokens) != 1:
        return None
    tok = tokens[0]
    if tok.kind == "string":
        return len(tok.text) - 2 - tok.text.count("\\")
    if tok.kind == "param":
        value = params.get(tok.text[1:].strip("`"))
        if isinstance(value, str):
            return len(value)
    return None


def _matching(code: list[Token]) -> dict[int, int]:
    """Index of the closing bracket of every opening bracket (the last token if unclosed)."""
    match: dict[int, int] = {}
    stack: list[int] = []
    for k, tok in enumerate(code):
        if tok.kind == "punct" and tok.text in _OPEN:
            stack.append(k)
        elif tok.kind == "punct" and tok.text in _CLOSE and stack:
            match[stack.pop()] = k
    for k in stack:
        match[k] = len(code) - 1
    return match


def _top_level(code: list[Token], lo: int, hi: int) -> list[int]:
    """Indices in ``[lo, hi)`` not inside a bracket opened in that range."""
    out, depth = [], 0
    for k in range(lo, hi):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            if depth == 0:
                out.append(k)
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(k)
    return out


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
        raise _budget("range() takes a start, an end and an optional step")
    values = [_int_value(a, params) for a in args]
    if any(v is None for v in values):
        raise _budget(
            "range() bounds must be integer literals or integer parameters (an unbounded "
            "range() runs past the server's timeout); use UNWIND over matched data or small "
            "literal bounds")
    ints = [v for v in values if v is not None]  # all of them (checked above)
    start, end = ints[0], ints[1]
    step = ints[2] if len(ints) == 3 else 1
    if step == 0:
        raise _budget("range() step 0")
    return max(0, (end - start) // step + 1)


def _is_call(code: list[Token], roles: list[str], k: int, name: str) -> bool:
    tok = code[k]
    return (tok.kind == "word" and roles[k] == "keyword" and tok.text.lower() == name
            and k + 1 < len(code) and code[k + 1].text == "(" and code[k + 1].kind == "punct"
            and not (k and code[k - 1].text == "."))


def check_generators(code: list[Token], params: Mapping[str, Any] | None = None, *,
                     max_range: int = MAX_RANGE_ELEMENTS) -> int:
    """Refuse ``reduce()`` and unbounded or too large ``range()``; return the range elements."""
    params = params or {}
    roles = word_roles(code)
    total = 1
    found = False
    for k in range(len(code)):
        if _is_call(code, roles, k, "reduce"):
            raise _budget(
                "reduce() is not allowed (its accumulator can grow without bound inside one "
                "expression, past the server's timeout); use aggregation such as sum(), "
                "collect() or size() instead")
        if _is_call(code, roles, k, "range"):
            args, _ = _call_arguments(code, k + 1)
            total *= max(1, _range_length(args, params))
            found = True
            if total > max_range:
                raise _budget(f"range() calls would generate {total:,}+ elements (at most "
                              f"{max_range:,} per query); use smaller bounds")
    return total if found else 0


@dataclass
class Iteration:
    """One construct that iterates over a list inside an expression (see the module docstring).

    ``code[start..end]`` is its extent (nested iterations lie inside it), ``size`` the length of
    the list when known (``None``: unknown), ``body_chars`` the characters of the part evaluated
    once per element.
    """

    kind: str
    start: int
    end: int
    size: int | None
    body_chars: int
    #: the size is a parameter's length (the caller's, not the query's)
    from_param: bool = False


def _list_elements(code: list[Token], open_at: int, close_at: int) -> int:
    inner = _top_level(code, open_at + 1, close_at)
    if not inner:
        return 0
    return 1 + sum(1 for k in inner if code[k].kind == "punct" and code[k].text == ",")


def _source_size(code: list[Token], roles: list[str], lo: int, hi: int,
                 match: dict[int, int], comprehensions: set[int],
                 params: Mapping[str, Any]) -> int | None:
    """Known size of the list expression ``code[lo:hi]``: a literal list, a range() call or a
    parameter holding a list."""
    if lo >= hi:
        return None
    first = code[lo]
    if first.kind == "param" and hi == lo + 1:
        value = params.get(first.text[1:].strip("`"))
        return len(value) if isinstance(value, (list, tuple)) else None
    if first.kind == "punct" and first.text == "[" and match.get(lo) == hi - 1 \
            and lo not in comprehensions:
        return _list_elements(code, lo, hi - 1)
    if _is_call(code, roles, lo, "range") and match.get(lo + 1) == hi - 1:
        args, _ = _call_arguments(code, lo + 1)
        return _range_length(args, params)
    return None


def _body_chars(code: list[Token], lo: int, hi: int) -> int:
    return code[hi].end - code[lo].start if lo <= hi < len(code) else 0


def find_iterations(code: list[Token], params: Mapping[str, Any] | None = None
                    ) -> list[Iteration]:
    """Every iteration of ``code`` (comments removed), in order of appearance."""
    params = params or {}
    roles = word_roles(code)
    match = _matching(code)

    def keyword(k: int, word: str) -> bool:
        return (0 <= k < len(code) and code[k].kind == "word" and roles[k] == "keyword"
                and code[k].text.upper() == word)

    def variable_in(k: int) -> bool:  # code[k:k+2] is ``x IN``
        return k + 1 < len(code) and code[k].kind in ("word", "name") and keyword(k + 1, "IN")

    comprehension_in: set[int] = set()  # IN tokens that belong to a comprehension
    comprehensions: set[int] = set()  # '[' of list / pattern comprehensions
    shapes: list[tuple[str, int, int, int]] = []  # kind, open bracket, first source, close
    for k, tok in enumerate(code):
        if tok.kind != "punct" or tok.text not in "[(" or k not in match:
            continue
        close = match[k]
        if tok.text == "[" and variable_in(k + 1):
            comprehensions.add(k)
            comprehension_in.add(k + 2)
            shapes.append(("list comprehension", k, k + 3, close))
        elif tok.text == "[" and any(code[j].text == "|" and code[j].kind == "punct"
                                     for j in _top_level(code, k + 1, close)):
            comprehensions.add(k)
            shapes.append(("pattern comprehension", k, -1, close))
        elif tok.text == "(" and k and code[k - 1].kind == "word" and roles[k - 1] == "keyword" \
                and code[k - 1].text.lower() in _QUANTIFIERS and variable_in(k + 1):
            comprehension_in.add(k + 2)
            shapes.append((f"{code[k - 1].text}()", k, k + 3, close))
    found: list[Iteration] = []
    for kind, open_at, source, close in shapes:
        if source < 0:
            found.append(Iteration(kind, open_at, close, None,
                                   _body_chars(code, open_at + 1, close - 1)))
            continue
        cut = next((j for j in _top_level(code, source, close)
                    if (code[j].kind == "punct" and code[j].text == "|")
                    or keyword(j, "WHERE")), close)
        size = _source_size(code, roles, source, cut, match, comprehensions, params)
        found.append(Iteration(kind, open_at, close, size, _body_chars(code, cut, close - 1),
                               from_param=code[source].kind == "param"))
    found.extend(_projection_copies(code, roles, shapes, keyword))
    for k, tok in enumerate(code):
        if keyword(k, "IN") and k not in comprehension_in:
            operand_end = match.get(k + 1, k + 1) if k + 1 < len(code) else k
            if _is_call(code, roles, k + 1, "range"):
                operand_end = match.get(k + 2, k + 2)
            size = _source_size(code, roles, k + 1, operand_end + 1, match, comprehensions,
                                params)
            found.append(Iteration("membership test (IN)", k, k, size, 0,
                                   from_param=k + 1 < len(code) and code[k + 1].kind == "param"))
        elif tok.kind == "word" and roles[k] == "keyword" and tok.text.upper() in _SUBQUERY_WORDS \
                and k + 1 < len(code) and code[k + 1].text == "{" and k + 1 in match:
            close = match[k + 1]
            found.append(Iteration(f"{tok.text} subquery", k + 1, close, None,
                                   _body_chars(code, k + 2, close - 1)))
    for k, tok in enumerate(code):
        if tok.kind == "punct" and tok.text == "[" and k in match and k not in comprehensions:
            elements = _list_elements(code, k, match[k])
            if elements > MAX_LIST_LITERAL_ELEMENTS:
                raise _budget(f"a literal list of {elements:,} elements (at most "
                              f"{MAX_LIST_LITERAL_ELEMENTS:,}); pass long lists as a parameter "
                              "or match them in the graph")
    return sorted(found, key=lambda it: it.start)


def _projection_copies(code: list[Token], roles: list[str],
                       shapes: list[tuple[str, int, int, int]], keyword: Any) -> list[Iteration]:
    """A variable of the enclosing query named in a comprehension's projection (``[a IN L |
    M]``) may hold a collected list, copied once per element: an iteration of unknown size."""
    local: set[str] = set()
    for _kind, open_at, source, close in shapes:
        if source >= 0:
            local.add(code[open_at + 1].text.strip("`"))
        else:  # a pattern comprehension binds the variables of its pattern
            local.update(t.text.strip("`") for t in code[open_at + 1:close]
                         if t.kind in ("word", "name"))
    copies: list[Iteration] = []
    for kind, open_at, source, close in shapes:
        if kind.endswith("()"):
            continue  # quantifiers have no projection
        start = open_at + 1 if source < 0 else source
        bar = next((j for j in _top_level(code, start, close)
                    if code[j].kind == "punct" and code[j].text == "|"), close)
        for j in range(bar + 1, close):
            tok = code[j]
            if tok.kind not in ("word", "name") or roles[j] not in ("keyword", "") \
                    or tok.text.upper() in _NOT_VARIABLES or tok.text.strip("`") in local:
                continue
            nxt = code[j + 1].text if j + 1 < len(code) else ""
            if nxt in ("(", ".") or (j and code[j - 1].text in (".", ":", "$")):
                continue  # a function, a property read, a label or a parameter
            if keyword(j - 1, "IN"):
                continue  # the list of a nested iteration: counted as that iteration
            if j >= 2 and code[j - 1].text == "(" and nxt == ")" \
                    and code[j - 2].text.lower() == "size":
                continue  # size(M) reads a length
            copies.append(Iteration(f"copy of {tok.text}", j, j, None, 0))
    return copies


def check_expression_work(code: list[Token], params: Mapping[str, Any] | None = None, *,
                          max_range: int = MAX_RANGE_ELEMENTS) -> None:
    """Refuse expressions whose work the server cannot stop (module docstring: the cost model)."""
    params = params or {}
    enclosing: list[Iteration] = []  # the iterations whose brackets hold the current one
    for it in find_iterations(code, params):  # by start; bracket spans nest, never overlap
        while enclosing and enclosing[-1].end < it.start:
            enclosing.pop()
        chain = enclosing + [it]
        if it.end > it.start:
            enclosing.append(it)
        if len(chain) > MAX_ITERATION_DEPTH:
            raise _budget(f"{len(chain)} iterations nested in one expression (at most "
                          f"{MAX_ITERATION_DEPTH}); UNWIND the outer list instead")
        unknown = [o for o in chain if o.size is None]
        if len(unknown) > 1:
            names = " inside ".join(o.kind for o in reversed(unknown))
            raise _budget(f"a {names}, both over lists of unknown size (a variable or "
                          "collect()ed list), multiply the work inside one expression past the "
                          "server's timeout; UNWIND one of the lists into rows instead")
        known = math.prod(o.size or 1 for o in chain)
        literal = math.prod(o.size or 1 for o in chain if not o.from_param)
        if unknown and literal > MAX_KNOWN_WITH_UNKNOWN:
            raise _budget(f"a {unknown[0].kind} over a list of unknown size nested with "
                          f"{literal:,} listed or ranged elements (at most "
                          f"{MAX_KNOWN_WITH_UNKNOWN:,}); UNWIND one of them into rows instead")
        if known > max_range:
            raise _budget(f"nested iterations over {known:,} elements in one expression (at "
                          f"most {max_range:,}); use smaller lists or UNWIND")
        if known * it.body_chars > MAX_ITERATION_WORK:
            raise _budget(f"a {it.kind} evaluates {it.body_chars:,} characters of expression "
                          f"for each of {known:,} elements; make the body smaller")
        if unknown and it.body_chars > MAX_UNKNOWN_BODY_CHARS:
            raise _budget(f"a {it.kind} over a list of unknown size has a {it.body_chars:,}-"
                          f"character body (at most {MAX_UNKNOWN_BODY_CHARS:,})")
    _check_replace(code, params)


def _check_replace(code: list[Token], params: Mapping[str, Any]) -> None:
    roles = word_roles(code)
    spans: list[tuple[int, int]] = []
    for k in range(len(code)):
        if not _is_call(code, roles, k, "replace"):
            continue
        args, close = _call_arguments(code, k + 1)
        if any(lo < k < hi for lo, hi in spans):
            raise _budget("replace() nested in replace() multiplies the string's length at "
                          "each level (a 3 kB query grew a 100 MB string); replace once")
        spans.append((k, close))
        if len(args) != 3:
            continue  # the server reports the wrong argument count
        search, replacement = _str_length(args[1], params), _str_length(args[2], params)
        if replacement is None:
            raise _budget("replace() needs a string literal or string parameter as its "
                          "replacement (a computed replacement can grow the string without "
                          "bound)")
        if search == 0 and replacement:
            raise _budget("replace() with an empty search string inserts the replacement at "
                          "every position; search for a non-empty string")
        if replacement > MAX_REPLACE_GROWTH * max(1, search or 0):
            raise _budget(f"replace() with a replacement {replacement:,} characters long for a "
                          f"{search if search is not None else 'computed'}-character search "
                          f"string grows the text more than {MAX_REPLACE_GROWTH}-fold")


def _branches(code: list[Token], roles: list[str]) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of the top-level ``UNION`` branches."""
    out: list[tuple[int, int]] = []
    start = 0
    for k in _top_level(code, 0, len(code)):
        tok = code[k]
        if tok.kind == "word" and roles[k] == "keyword" and tok.text.upper() == "UNION":
            out.append((start, k))
            after = k + 1
            if after < len(code) and code[after].kind == "word" \
                    and code[after].text.upper() == "ALL":
                after += 1
            start = after
    out.append((start, len(code)))
    return out


def _top_level_words(code: list[Token], roles: list[str], lo: int, hi: int,
                     word: str) -> list[int]:
    return [k for k in _top_level(code, lo, hi) if code[k].kind == "word"
            and roles[k] == "keyword" and code[k].text.upper() == word]


def cap_rows(query: str, code: list[Token], cap: int,
             params: Mapping[str, Any] | None = None) -> str:
    """``query`` with ``LIMIT cap`` on each branch's final ``RETURN`` (an existing one lowered)."""
    params = params or {}
    roles = word_roles(code)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) on the query text
    for lo, hi in _branches(code, roles):
        if lo >= hi:
            continue
        returns = _top_level_words(code, roles, lo, hi, "RETURN")
        if not returns:
            continue
        limits = _top_level_words(code, roles, returns[-1], hi, "LIMIT")
        if limits:
            expr = code[limits[-1] + 1:hi]
            value = _int_value(expr, params)
            if value is None:
                raise _budget("LIMIT must be an integer literal or an integer parameter")
            if value > cap:
                edits.append((expr[0].start, expr[-1].end, str(cap)))
        else:
            end = code[hi - 1].end
            edits.append((end, end, f" LIMIT {cap}"))
    for start, end, text in sorted(edits, reverse=True):
        query = query[:start] + text + query[end:]
    return query


def prepare_untrusted_query(query: str, params: Mapping[str, Any] | None = None, *,
                            max_rows: int = 100, max_range: int = MAX_RANGE_ELEMENTS,
                            backend: str | None = None) -> str:
    """The text to send for untrusted ``query``: checked read-only, work bounded, rows capped.

    The server returns at most ``max_rows + 1`` rows (one more than wanted, so a caller can tell
    the result was cut). ``backend`` is passed to
    :func:`~kgrag.graph.cypher.safety.check_read_only` (per-backend return types). Raises
    :class:`~kgrag.errors.UnsafeQueryError` (writes, procedures) or its subclass
    :class:`~kgrag.errors.QueryBudgetError` (budgets).
    """
    if max_rows < 1:
        raise ValueError("max_rows must be >= 1")
    text = check_read_only(query, backend=backend)
    code = code_tokens(tokenize_cypher(text))
    check_generators(code, params, max_range=max_range)
    check_expression_work(code, params, max_range=max_range)
    return cap_rows(text, code, max_rows + 1, params)
