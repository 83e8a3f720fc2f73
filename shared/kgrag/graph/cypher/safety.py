"""Refuse Cypher that could write, call procedures or administer the database.

LLM-written Cypher (ByoKG-RAG, GraphRAFT) is untrusted input. It is checked *before* it is sent.
The stores also run it read-only where the server can enforce that (FalkorDB's
``GRAPH.RO_QUERY``, Neo4j's READ transactions), but **FalkorDB's Bolt endpoint ignores the READ
access mode**: there this check is the only lock, so it errs on the side of refusing. Refusing a
harmless query costs one retry of the LLM; accepting a harmful one costs the database.

How the check works (:func:`check_read_only`):

1. A lexer (:func:`tokenize_cypher`) follows Cypher's grammar for what hides text from the
   parser: ``/* ... */`` block comments (not nested), ``// ...`` line comments, string literals
   in single or double quotes with backslash escapes and backtick-quoted names (a doubled
   backtick is an escaped backtick). Numbers are read the way Cypher reads them (``12``,
   ``1_000``, ``0x1F``, ``0o17``, ``1.5e-3``) and parameters as ``$name``, ``$12`` or
   ``$`quoted```; a number or ``$12`` glued to a letter (``LIMIT 1CREATE``, ``$1CREATE``,
   ``0x1MERGE``: a server reads the number, then a keyword) is refused. An unterminated string,
   comment or name is refused.
2. Where a ``//`` comment ends is where servers disagree: openCypher and FalkorDB end it at
   ``\n`` only, Neo4j 5's lexer at ``\r`` or ``\n``. The text is lexed both ways and refused
   when the two readings differ. ``\r\n`` line ends read the same both ways.
3. Characters. Outside string literals, quoted names and comments only ASCII is accepted: a
   Cyrillic ``С`` or Greek ``Ε`` in ``СREATE`` is a homoglyph, a combining grapheme joiner
   (U+034F) or a zero-width space inside a keyword hides it from a reader that drops it, and
   FalkorDB refuses non-ASCII identifiers anyway (quote them with backticks). Invisible and
   control characters (Unicode categories Cc, Cf, Co, Cs, Cn, Zl, Zp) are refused in comments
   too. Inside literals and quoted names any character is data (a ZWJ emoji, a soft hyphen),
   except C0/C1 controls other than tab / newline / CR and lone surrogates, refused everywhere.
4. A ``;`` followed by anything is refused (one statement only).
5. Every word gets a *role* by its position (:func:`word_roles`): an **alias** is the one name
   right after the keyword ``AS``; a **property** key follows ``.`` after something that ends an
   expression (a variable, ``)``, ``]``, ``}``, a parameter: ``n.set``, ``n.update``); every
   other word is a **keyword** position (clause, operator, variable, function or label). Words
   in keyword position are compared, case-insensitively, with the keywords of writing,
   procedure and administration clauses (``CREATE``, ``MERGE``, ``SET``, ``DELETE``,
   ``DETACH``, ``REMOVE``, ``DROP``, ``CALL``, ``LOAD``, ``FOREACH``, ``USE``, ``GRANT``,
   ``SHOW``, ...). The exemption is one token wide: in ``WITH 1 AS as CREATE (:X)`` the alias
   is ``as`` and ``CREATE`` is in keyword position again. An alias spelled like a clause
   keyword must also end the projection item (be followed by ``,``, ``)``, ``}``, a word or the
   end), so ``AS start`` and ``AS use`` pass and ``AS CREATE (n)`` does not.
6. Calls. ``CALL`` is refused whatever follows (no procedure runs, backtick-quoted or not). A
   function name in backticks (`` `range`(1, 10^9) ``, `` `db.idx.fulltext.drop`('x') ``) is
   refused: no built-in needs quoting, and a quoted name would slip past the budgets of
   :mod:`kgrag.graph.cypher.budget`. A dotted name followed by ``(`` (``apoc.version()``,
   ``db.labels()``, ``date.truncate(...)``) is a namespaced function, accepted only when listed
   in :data:`ALLOWED_NAMESPACED_FUNCTIONS`; the same word as a variable is fine
   (``MATCH (db) RETURN db.name``).
7. Nesting. FalkorDB's parser takes time exponential in expression nesting and its query timeout
   does not cover parsing (``benchmarks/falkordb_parser_depth.py``, FalkorDB 4.16.3, fresh
   query texts: 16 nested ``(`` 1.2 s, 18 nested ``[`` 4.0 s, 18 ``abs(`` 4.3 s, 18 ``NOT``
   3.2 s, 18 unary ``-`` 1.8 s, 16 nested ``CASE`` 1.3 s; about x2 per level, so depth 40 in 100
   characters would hold a server thread for years). :func:`nesting_depth` counts brackets,
   ``CASE ... END`` and runs of prefix operators (``NOT``, unary ``-`` / ``+``), and a depth
   above :data:`MAX_NESTING_DEPTH` (10: 4-31 ms to parse, measured) is refused with
   :class:`~kgrag.errors.QueryBudgetError`. Sibling expressions add up (each is parsed the same
   way), so the estimated parse work (:func:`parse_work`, 2^d per level opened at depth d) is
   capped too, at :data:`MAX_PARSE_WORK`.
8. Per-backend return types (``backend=``): a server that cannot send a value type must not be
   asked for it. FalkorDB's Bolt endpoint (``backend="falkordb-bolt"``) aborts the whole
   server when a reply holds a temporal value, so ``date()``, ``datetime()``,
   ``localdatetime()``, ``localtime()``, ``time()`` and ``duration()`` are refused there (see
   :data:`BACKEND_REFUSED_FUNCTIONS`; temporal values *stored* in the graph cannot be detected
   from the query text: serve such a graph with ``FalkorDBGraphStore``).
9. The checks run on the text as written and again on its NFKC normalisation; both must pass.
   The **original** text is what is returned and executed, so ``WHERE n.name = 'Film²'`` still
   matches ``Film²``.

Budgets (row caps, ``range()`` sizes, expression work, time) are in
:mod:`kgrag.graph.cypher.budget`.

>>> is_read_only("MATCH (n {name: 'CREATE'}) RETURN n.set AS start LIMIT 5")
True
>>> is_read_only("WITH 1 AS as CREATE (:Pwned)")
False
>>> check_read_only("MATCH (n) DETACH DELETE n")
Traceback (most recent call last):
...
kgrag.errors.UnsafeQueryError: refused Cypher: it contains the clause keyword 'DETACH' (write, \
procedure or admin clauses are not allowed)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from kgrag.errors import QueryBudgetError, UnsafeQueryError

#: Clause keywords that write, call procedures, load files or administer the server.
FORBIDDEN_KEYWORDS: frozenset[str] = frozenset({
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "CALL", "LOAD", "CSV",
    "FOREACH", "USE", "GRANT", "REVOKE", "DENY", "ALTER", "RENAME", "START", "STOP", "SHOW",
    "TERMINATE", "ENABLE", "DISABLE", "PERIODIC", "TRANSACTIONS", "IMPORT", "COPY", "INSERT",
    "UPDATE", "UPSERT", "TRUNCATE", "ATTACH", "INSTALL",
})

#: Function / procedure namespaces that can have side effects or reach outside the graph
#: (named in refusals; every namespaced call not in :data:`ALLOWED_NAMESPACED_FUNCTIONS` is
#: refused).
FORBIDDEN_NAMESPACES: tuple[str, ...] = ("apoc", "dbms", "gds", "db", "algo", "genai")

#: Namespaced functions accepted (lower case): pure, read-only built-ins of Neo4j / FalkorDB
#: that return numbers.
ALLOWED_NAMESPACED_FUNCTIONS: frozenset[str] = frozenset({
    "point.distance", "point.withinbbox", "vector.similarity.cosine",
    "vector.similarity.euclidean", "vec.cosinedistance", "vec.euclideandistance",
})

#: Functions a backend cannot return the value of (lower case), and why. ``falkordb-bolt`` is
#: FalkorDB's Bolt endpoint: its reply writer aborts the server on a temporal value
#: (``resultset_replybolt.c: Unhandled value type``), taking every graph on it down.
BACKEND_REFUSED_FUNCTIONS: dict[str, tuple[frozenset[str], str]] = {
    "falkordb-bolt": (
        frozenset({"date", "datetime", "localdatetime", "localtime", "time", "duration"}),
        "FalkorDB's Bolt endpoint cannot return temporal values (it crashes the server); "
        "compare or return dates as strings or numbers, e.g. a stored year property"),
}

#: Deepest expression nesting accepted (brackets, CASE, runs of NOT / unary signs), see point 7.
MAX_NESTING_DEPTH = 10
#: Most parse work accepted (:func:`parse_work`: 2^d per level opened at depth d), about four
#: chains nested :data:`MAX_NESTING_DEPTH` deep, see point 7.
MAX_PARSE_WORK = 8_192

#: Longest query accepted: LLM-written Cypher is a few hundred characters; a runaway reply is
#: refused instead of lexed.
MAX_QUERY_CHARS = 20_000

#: Characters allowed in code although their Unicode category is "control".
_ALLOWED_CONTROL = frozenset("\t\n\r")
#: Categories refused outside string literals and quoted names.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_WORD_CHARS = _WORD_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
#: Cypher number literals: hex, octal, then decimal / float with optional ``_`` separators.
_NUMBER = re.compile(r"0x[0-9A-Fa-f]+(?:_[0-9A-Fa-f]+)*|0o[0-7]+(?:_[0-7]+)*"
                     r"|\d+(?:_\d+)*(?:\.\d+(?:_\d+)*)?(?:[eE][+-]?\d+)?")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: The two readings of where a ``//`` comment ends (openCypher / FalkorDB; Neo4j 5).
LINE_COMMENT_ENDS: tuple[str, ...] = ("\n", "\r\n")

#: Words after which a ``-`` / ``+`` is a prefix (unary) operator, and words that are operators
#: or clause keywords (never the end of an expression).
_OPERATOR_WORDS = frozenset({
    "MATCH", "OPTIONAL", "WHERE", "RETURN", "WITH", "UNWIND", "AS", "AND", "OR", "XOR", "NOT",
    "IN", "IS", "CASE", "WHEN", "THEN", "ELSE", "ORDER", "BY", "SKIP", "LIMIT", "DISTINCT",
    "UNION", "ALL", "STARTS", "ENDS", "CONTAINS", "YIELD",
})


#: Words that never end an operand.
_NOT_OPERANDS = FORBIDDEN_KEYWORDS | _OPERATOR_WORDS


def _refuse(reason: str) -> UnsafeQueryError:
    return UnsafeQueryError(f"refused Cypher: {reason}")


@dataclass(frozen=True)
class Token:
    """One lexical token: ``text[start:end]``.

    ``kind`` is ``word`` (an ASCII identifier or keyword), ``number``, ``string`` (a quoted
    literal), ``name`` (a backtick-quoted name), ``param`` (``$name``), ``comment`` or ``punct``
    (any other single character outside whitespace).
    """

    kind: str
    text: str
    start: int
    end: int


def _find_line_end(query: str, start: int, ends: str) -> int:
    """Index of the first character of ``ends`` at or after ``start`` (``len(query)`` if none)."""
    best = len(query)
    for ch in ends:
        pos = query.find(ch, start, best)
        if pos >= 0:
            best = pos
    return best


def _quoted_name_end(query: str, i: int) -> int:
    """End (exclusive) of the backtick-quoted name whose opening backtick is ``query[i]``."""
    j = i + 1
    while True:
        j = query.find("`", j)
        if j < 0:
            raise _refuse("unterminated `quoted name`")
        if query.startswith("``", j):  # an escaped backtick inside the name
            j += 2
            continue
        return j + 1


def _refuse_glued(query: str, start: int, i: int, what: str) -> None:
    """Refuse when the number or parameter ``query[start:i]`` runs into a word character."""
    if i < len(query) and query[i] in _WORD_CHARS:
        raise _refuse(f"{what} {query[start:i][:20]!r} is glued to the word that follows it (a "
                      "server reads a keyword there); put a space between")


def tokenize_cypher(query: str, *, line_comment_ends: str = "\r\n") -> list[Token]:
    """Cypher tokens of ``query`` (whitespace dropped, comments kept as ``comment`` tokens).

    ``line_comment_ends``: the characters that end a ``//`` comment (``"\\n"`` for openCypher
    and FalkorDB, ``"\\r\\n"`` for Neo4j 5). One pass; raises :class:`UnsafeQueryError` for an
    unterminated string, block comment or quoted name, and for a number or numbered parameter
    glued to a word (``1CREATE``).
    """
    tokens: list[Token] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch.isspace() and ch not in "\x1c\x1d\x1e\x1f":  # str.isspace counts these separators
            i += 1
            continue
        start = i
        if ch == "/" and query.startswith("//", i):
            i = _find_line_end(query, i + 2, line_comment_ends)
            tokens.append(Token("comment", query[start:i], start, i))
        elif ch == "/" and query.startswith("/*", i):
            end = query.find("*/", i + 2)
            if end < 0:
                raise _refuse("unterminated /* comment")
            i = end + 2
            tokens.append(Token("comment", query[start:i], start, i))
        elif ch in "'\"":
            j = i + 1
            while j < n and query[j] != ch:
                j += 2 if query[j] == "\\" else 1
            if j >= n:
                raise _refuse("unterminated string literal")
            i = j + 1
            tokens.append(Token("string", query[start:i], start, i))
        elif ch == "`":
            i = _quoted_name_end(query, i)
            tokens.append(Token("name", query[start:i], start, i))
        elif ch in _WORD_START:
            while i < n and query[i] in _WORD_CHARS:
                i += 1
            tokens.append(Token("word", query[start:i], start, i))
        elif ch in _DIGITS:
            match = _NUMBER.match(query, i)
            i = match.end() if match else i + 1
            _refuse_glued(query, start, i, "the number")
            tokens.append(Token("number", query[start:i], start, i))
        elif ch == "$":
            i += 1
            if i < n and query[i] == "`":
                i = _quoted_name_end(query, i)
            elif i < n and query[i] in _DIGITS:
                while i < n and query[i] in _DIGITS:
                    i += 1
                _refuse_glued(query, start, i, "the parameter")
            elif match := _IDENTIFIER.match(query, i):
                i = match.end()
            else:
                raise _refuse("a '$' that does not start a parameter name")
            tokens.append(Token("param", query[start:i], start, i))
        else:
            i += 1
            tokens.append(Token("punct", ch, start, i))
    return tokens


def code_tokens(tokens: list[Token]) -> list[Token]:
    """``tokens`` without comments."""
    return [t for t in tokens if t.kind != "comment"]


def strip_literals_and_comments(query: str) -> str:
    """``query`` with comments removed and strings / backtick names replaced by placeholders.

    Strings become ``''`` and quoted names become ``_q_`` so the token structure stays intact.
    Raises :class:`UnsafeQueryError` for an unterminated string, comment or quoted name.
    """
    out: list[str] = []
    for tok in code_tokens(tokenize_cypher(query)):
        out.append("''" if tok.kind == "string" else "_q_" if tok.kind == "name" else tok.text)
    return " ".join(out)


def _check_characters(text: str, tokens: list[Token]) -> None:
    inside = bytearray(len(text))  # 1 in a string or quoted name, 2 in a comment
    for tok in tokens:
        if tok.kind in ("string", "name", "comment"):
            mark = b"\x02" if tok.kind == "comment" else b"\x01"
            inside[tok.start:tok.end] = mark * (tok.end - tok.start)
    for i, ch in enumerate(text):
        if ch.isascii() and (ch >= " " or ch in _ALLOWED_CONTROL) and ch != "\x7f":
            continue
        category = unicodedata.category(ch)
        if category == "Cs" or (category == "Cc" and ch not in _ALLOWED_CONTROL):
            raise _refuse(f"it contains the control character U+{ord(ch):04X}")
        if inside[i] == 1:
            continue
        if category in _HIDDEN_CATEGORIES:
            raise _refuse(f"it contains the invisible or control character U+{ord(ch):04X} "
                          "outside a string literal")
        if not inside[i]:
            raise _refuse(f"it contains the non-ASCII character {ch!r} (U+{ord(ch):04X}, "
                          f"{unicodedata.name(ch, 'unnamed')}) outside a string literal or "
                          "`quoted name`: write keywords and names in ASCII, quote other names "
                          "with backticks")


def _ends_operand(code: list[Token], roles: list[str], k: int, *, numbers: bool = True) -> bool:
    """``code[k]`` can end an operand (a variable, literal, parameter, ``)``, ``]``, ``}``, a
    property or alias), so a following ``AS`` aliases it and a following ``.`` reads a key."""
    tok = code[k]
    if tok.kind in ("name", "param"):
        return True
    if tok.kind in ("number", "string"):
        return numbers
    if tok.kind == "word":
        return roles[k] in ("property", "alias") or tok.text.upper() not in _NOT_OPERANDS
    return tok.kind == "punct" and tok.text in ")]}"


def word_roles(code: list[Token]) -> list[str]:
    """The role of each token of ``code`` (comments removed): ``keyword``, ``alias`` or
    ``property`` for words (see the module docstring, point 5), ``""`` for other tokens.

    A word is an ``alias`` only right after an ``AS`` that itself follows an operand
    (``expr AS alias``; in ``WITH as SET ...`` the word ``as`` is a variable and ``SET`` stays a
    keyword), and a ``property`` only after a ``.`` that follows a variable, property, quoted
    name, parameter or closing bracket (``1.SET`` is a number and a keyword). Only a word in
    ``keyword`` role can start or continue a clause.
    """
    roles = [""] * len(code)
    for k, tok in enumerate(code):
        if tok.kind != "word":
            continue
        roles[k] = "keyword"
        if k < 2:
            continue
        prev = code[k - 1]
        if prev.kind == "word" and roles[k - 1] == "keyword" and prev.text.upper() == "AS" \
                and _ends_operand(code, roles, k - 2):
            roles[k] = "alias"
        elif prev.kind == "punct" and prev.text == "." \
                and _ends_operand(code, roles, k - 2, numbers=False):
            roles[k] = "property"
    return roles


def _dotted_call_name(code: list[Token], k: int) -> tuple[int, list[Token]] | None:
    """When ``code[k]`` is ``(`` after a dotted name (``a.b.c(``), its first index and parts."""
    j = k - 1
    parts: list[Token] = []
    while j >= 0 and code[j].kind in ("word", "name"):
        parts.insert(0, code[j])
        if j >= 1 and code[j - 1].text == "." and code[j - 1].kind == "punct":
            j -= 2
            continue
        break
    if len(parts) < 2:
        return None
    return j, parts


def _check_words(code: list[Token], backend: str | None) -> None:
    roles = word_roles(code)
    refused_functions, why = BACKEND_REFUSED_FUNCTIONS.get(backend or "", (frozenset(), ""))
    for k, tok in enumerate(code):
        if tok.kind == "punct" and tok.text == ";" and k + 1 < len(code):
            raise _refuse("more than one statement")
        nxt = code[k + 1] if k + 1 < len(code) else None
        if tok.kind == "punct" and tok.text == "(":
            dotted = _dotted_call_name(code, k)
            if dotted is not None:
                parts = dotted[1]
                if any(p.kind == "name" for p in parts):
                    raise _refuse("a function name in `backticks`: call functions by their "
                                  "plain name")
                name = ".".join(p.text for p in parts)
                if name.lower() not in ALLOWED_NAMESPACED_FUNCTIONS:
                    space = parts[0].text
                    what = (f"it calls into the {space!r} namespace"
                            if space.lower() in FORBIDDEN_NAMESPACES
                            else f"it calls the namespaced function {name!r}")
                    raise _refuse(f"{what} (procedures and library functions are not allowed)")
            elif k and code[k - 1].kind == "name":
                raise _refuse(f"a function name in `backticks` ({code[k - 1].text}): call "
                              "functions by their plain name")
            continue
        if tok.kind != "word" or roles[k] == "property":
            continue
        word = tok.text.upper()
        if roles[k] == "alias":
            if word in FORBIDDEN_KEYWORDS and nxt is not None and nxt.kind != "word" \
                    and nxt.text not in ",;)}]":
                raise _refuse(f"the alias {tok.text!r} is spelled like a clause keyword and "
                              "does not end its projection item")
            continue
        if word in FORBIDDEN_KEYWORDS:
            raise _refuse(f"it contains the clause keyword {word!r} "
                          "(write, procedure or admin clauses are not allowed)")
        if nxt is not None and nxt.text == "(" and tok.text.lower() in refused_functions:
            raise _refuse(f"{tok.text}() is refused for this backend: {why}")


def _nesting(code: list[Token]) -> tuple[int, int]:
    """(deepest nesting, parse work) of ``code``; see :func:`nesting_depth`, :func:`parse_work`."""
    roles = word_roles(code)
    frames: list[int] = []
    depth = deepest = run = work = 0
    for k, tok in enumerate(code):
        word = tok.text.upper() if tok.kind == "word" and roles[k] == "keyword" else ""
        if (tok.kind == "punct" and tok.text in "([{") or word == "CASE":
            frames.append(1 + run)
            depth += 1 + run
            run = 0
            work += 2 ** min(depth, 62)
        elif (tok.kind == "punct" and tok.text in ")]}") or word == "END":
            depth -= frames.pop() if frames else 0
            run = 0
        elif word == "NOT" or (tok.kind == "punct" and tok.text in "-+" and (
                k == 0 or not _ends_operand(code, roles, k - 1))):
            run += 1
            work += 2 ** min(depth + run, 62)
        else:
            run = 0
        deepest = max(deepest, depth + run)
    return deepest, work


def nesting_depth(code: list[Token]) -> int:
    """Deepest expression nesting of ``code``: brackets, ``CASE ... END`` and prefix runs.

    Each open bracket or ``CASE`` counts 1 plus the run of prefix operators (``NOT``, unary
    ``-`` / ``+``) right before it, and a run of prefix operators counts its length where it
    stands: ``NOT (NOT (x))`` is 4 deep, ``- - - 1`` 3 deep. A ``-`` after something that ends
    an operand is binary (or part of a pattern arrow) and not counted.
    """
    return _nesting(code)[0]


def parse_work(code: list[Token]) -> int:
    """Estimated parser work of ``code``: each nesting level opened at depth ``d`` costs
    ``2**d`` (a chain 10 deep costs 2,046), so many sibling expressions, each under the depth
    cap, are bounded together (:data:`MAX_PARSE_WORK`)."""
    return _nesting(code)[1]


def _check_reading(text: str, backend: str | None) -> list[Token]:
    readings = [code_tokens(tokenize_cypher(text, line_comment_ends=ends))
                for ends in LINE_COMMENT_ENDS]
    first = readings[0]
    if any([(t.kind, t.start) for t in r] != [(t.kind, t.start) for t in first]
           for r in readings[1:]):
        raise _refuse("a // comment holds a carriage return: servers disagree where it ends")
    _check_characters(text, tokenize_cypher(text))
    depth, work = _nesting(first)
    if depth > MAX_NESTING_DEPTH:
        raise QueryBudgetError(
            f"refused Cypher budget: expressions nested {depth} deep (brackets, CASE, NOT or "
            f"unary signs; at most {MAX_NESTING_DEPTH}): the server's parser slows down "
            "exponentially with nesting; flatten the expression")
    if work > MAX_PARSE_WORK:
        raise QueryBudgetError(
            f"refused Cypher budget: too many deeply nested expressions (parse work {work:,}, "
            f"at most {MAX_PARSE_WORK:,}; a level at depth d costs 2^d): the server's parser "
            "would hold a thread past any timeout; simplify the query")
    _check_words(first, backend)
    return first


def check_read_only(query: str, *, backend: str | None = None) -> str:
    """Return ``query`` (stripped, its final ``;`` removed) if it is one read-only statement.

    ``backend``: the server the query is for (``"neo4j"``, ``"falkordb"``, ``"falkordb-bolt"``
    or ``None``): functions whose values that server cannot return are refused
    (:data:`BACKEND_REFUSED_FUNCTIONS`). Raises :class:`~kgrag.errors.UnsafeQueryError` naming
    the reason (see the module docstring). The returned text is the original, not a normalised
    copy.
    """
    if not isinstance(query, str):
        raise _refuse(f"expected a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise _refuse(f"longer than {MAX_QUERY_CHARS:,} characters")
    if not query.strip():
        raise _refuse("empty query")
    code = _check_reading(query, backend)
    folded = unicodedata.normalize("NFKC", query)
    if folded != query:
        _check_reading(folded, backend)
    if code and code[-1].text == ";":  # the one allowed ';' ends the statement: drop it
        query = query[:code[-1].start] + query[code[-1].end:]
    return query.strip()


def is_read_only(query: str, *, backend: str | None = None) -> bool:
    """``True`` when :func:`check_read_only` accepts ``query``."""
    try:
        check_read_only(query, backend=backend)
    except UnsafeQueryError:
        return False
    return True
