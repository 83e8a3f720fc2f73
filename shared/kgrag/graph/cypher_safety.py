"""Refuse Cypher that could write, call procedures or administer the database.

LLM-written Cypher (ByoKG-RAG, GraphRAFT) is untrusted input. It is checked *before* it is sent.
The stores also run it read-only where the server can enforce that (FalkorDB's
``GRAPH.RO_QUERY``, Neo4j's READ transactions), but **FalkorDB's Bolt endpoint ignores the READ
access mode**: there this check is the only lock, so it errs on the side of refusing.

How the check works (:func:`check_read_only`):

1. A lexer (:func:`tokenize_cypher`) follows Cypher's grammar for what hides text from the
   parser: ``/* ... */`` block comments (not nested), ``// ...`` line comments, string literals
   in single or double quotes with backslash escapes (``\\'``, ``\\\\``, ``\\uXXXX`` ...) and
   backtick-quoted names (a doubled backtick is an escaped backtick). An unterminated string,
   comment or name is refused.
2. Where a ``//`` comment ends is where servers disagree: openCypher and FalkorDB end it at
   ``\\n`` only, Neo4j 5's lexer at ``\\r`` or ``\\n``. The text is lexed both ways and refused
   when the two readings differ (a lone ``\\r`` inside a line comment could otherwise hide a
   clause from one reader and show it to the other). ``\\r\\n`` line ends read the same both ways.
3. Outside string literals and quoted names, control and invisible characters (zero-width
   spaces, bidi overrides, line/paragraph separators, unassigned code points) are refused: they
   can hide a keyword from a reader. Inside literals they are data and allowed (a ZWJ emoji or a
   soft hyphen in a name), except C0/C1 control characters other than tab / newline / CR, and
   lone surrogates, which are refused everywhere.
4. A ``;`` followed by anything is refused (one statement only).
5. The remaining words are compared, case-insensitively, with the keywords of writing,
   procedure and administration clauses (``CREATE``, ``MERGE``, ``SET``, ``DELETE``,
   ``DETACH``, ``REMOVE``, ``DROP``, ``CALL``, ``LOAD``, ``FOREACH``, ``USE``, ``GRANT``,
   ``SHOW``, ...). A word in a position where Cypher reads a *name* is not a clause and is
   allowed: right after ``AS`` (``RETURN n.name AS start``), after ``.`` following a variable,
   a closing bracket or a parameter (``n.set``, ``n.update``), and after ``$`` (a parameter).
   Words are ASCII runs: ``éCREATE`` is read as ``é`` + ``CREATE`` (FalkorDB refuses non-ASCII
   identifiers, so a lenient reading could otherwise hide a keyword).
6. Namespaced calls into procedure libraries (``apoc.x(...)``, ``db.labels()``, ``dbms.``,
   ``gds.``, ``algo.``, ``genai.``) are refused; the same word as a variable is fine
   (``MATCH (db) RETURN db.name``).
7. The checks run on the text as written and again on its NFKC normalisation (full-width
   ``ＣＲＥＡＴＥ`` folds to ``CREATE``); both must pass. The **original** text is what is
   returned and executed, so ``WHERE n.name = 'Film²'`` still matches ``Film²``.

Refusing a harmless query costs one retry of the LLM; accepting a harmful one costs the database.
Budgets (row caps, ``range()`` sizes, time) are in :mod:`kgrag.graph.cypher_budget`.

>>> is_read_only("MATCH (n {name: 'CREATE'}) RETURN n.set AS start LIMIT 5")
True
>>> check_read_only("MATCH (n) DETACH DELETE n")
Traceback (most recent call last):
...
kgrag.errors.UnsafeQueryError: refused Cypher: it contains the clause keyword 'DETACH' (write, procedure or admin clauses are not allowed)
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from kgrag.errors import UnsafeQueryError

#: Clause keywords that write, call procedures, load files or administer the server.
FORBIDDEN_KEYWORDS: frozenset[str] = frozenset({
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "CALL", "LOAD", "CSV",
    "FOREACH", "USE", "GRANT", "REVOKE", "DENY", "ALTER", "RENAME", "START", "STOP", "SHOW",
    "TERMINATE", "ENABLE", "DISABLE", "PERIODIC", "TRANSACTIONS", "IMPORT", "COPY", "INSERT",
    "UPDATE", "UPSERT", "TRUNCATE", "ATTACH", "INSTALL",
})

#: Function / procedure namespaces that can have side effects or reach outside the graph.
FORBIDDEN_NAMESPACES: tuple[str, ...] = ("apoc", "dbms", "gds", "db", "algo", "genai")

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

#: The two readings of where a ``//`` comment ends (openCypher / FalkorDB; Neo4j 5).
LINE_COMMENT_ENDS: tuple[str, ...] = ("\n", "\r\n")


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


def tokenize_cypher(query: str, *, line_comment_ends: str = "\r\n") -> list[Token]:
    """Cypher tokens of ``query`` (whitespace dropped, comments kept as ``comment`` tokens).

    ``line_comment_ends``: the characters that end a ``//`` comment (``"\\n"`` for openCypher
    and FalkorDB, ``"\\r\\n"`` for Neo4j 5). One pass; raises :class:`UnsafeQueryError` for an
    unterminated string, block comment or quoted name.
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
            j = i + 1
            while True:
                j = query.find("`", j)
                if j < 0:
                    raise _refuse("unterminated `quoted name`")
                if query.startswith("``", j):  # an escaped backtick inside the name
                    j += 2
                    continue
                break
            i = j + 1
            tokens.append(Token("name", query[start:i], start, i))
        elif ch in _WORD_START:
            while i < n and query[i] in _WORD_CHARS:
                i += 1
            tokens.append(Token("word", query[start:i], start, i))
        elif ch in _DIGITS:
            while i < n and query[i] in _WORD_CHARS:  # 12, 0x1F, 1e5 (a '.' is its own token)
                i += 1
            tokens.append(Token("number", query[start:i], start, i))
        elif ch == "$":
            i += 1
            if i < n and query[i] == "`":
                end = query.find("`", i + 1)
                if end < 0:
                    raise _refuse("unterminated `quoted name`")
                i = end + 1
            else:
                while i < n and query[i] in _WORD_CHARS:
                    i += 1
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
    literal = bytearray(len(text))  # 1 where a character is inside a string or quoted name
    for tok in tokens:
        if tok.kind in ("string", "name"):
            literal[tok.start:tok.end] = b"\x01" * (tok.end - tok.start)
    for i, ch in enumerate(text):
        if ch.isascii() and (ch >= " " or ch in _ALLOWED_CONTROL) and ch != "\x7f":
            continue
        category = unicodedata.category(ch)
        if category == "Cs" or (category == "Cc" and ch not in _ALLOWED_CONTROL):
            raise _refuse(f"it contains the control character U+{ord(ch):04X}")
        if category in _HIDDEN_CATEGORIES and not literal[i]:
            raise _refuse(f"it contains the invisible or control character U+{ord(ch):04X} "
                          "outside a string literal")


def _names_a_property(code: list[Token], k: int) -> bool:
    """``code[k]`` is a word read as a property key: ``x.word`` where x ends an expression."""
    if k < 2 or code[k - 1].text != ".":
        return False
    before = code[k - 2]
    if before.kind in ("name", "param"):
        return True
    if before.kind == "word":
        return before.text.upper() not in FORBIDDEN_KEYWORDS
    return before.kind == "punct" and before.text in ")]}"


def _check_words(code: list[Token]) -> None:
    for k, tok in enumerate(code):
        if tok.kind == "punct" and tok.text == ";" and k + 1 < len(code):
            raise _refuse("more than one statement")
        if tok.kind != "word":
            continue
        word = tok.text.upper()
        prev = code[k - 1] if k else None
        is_alias = prev is not None and prev.kind == "word" and prev.text.upper() == "AS"
        if word in FORBIDDEN_KEYWORDS and not is_alias and not _names_a_property(code, k):
            raise _refuse(f"it contains the clause keyword {word!r} "
                          "(write, procedure or admin clauses are not allowed)")
        if tok.text.lower() in FORBIDDEN_NAMESPACES and not _names_a_property(code, k):
            # a dotted chain from this word that ends in '(' is a namespaced call
            j = k + 1
            while j + 1 < len(code) and code[j].text == "." and code[j + 1].kind in ("word",
                                                                                    "name"):
                j += 2
            if j > k + 1 and j < len(code) and code[j].text == "(":
                raise _refuse(f"it calls into the {tok.text!r} namespace")


def _check_reading(text: str) -> list[Token]:
    readings = [code_tokens(tokenize_cypher(text, line_comment_ends=ends))
                for ends in LINE_COMMENT_ENDS]
    first = readings[0]
    if any([(t.kind, t.start) for t in r] != [(t.kind, t.start) for t in first]
           for r in readings[1:]):
        raise _refuse("a // comment holds a carriage return: servers disagree where it ends")
    _check_characters(text, tokenize_cypher(text))
    _check_words(first)
    return first


def check_read_only(query: str) -> str:
    """Return ``query`` (stripped, its final ``;`` removed) if it is one read-only statement.

    Raises :class:`~kgrag.errors.UnsafeQueryError` naming the reason (see the module docstring).
    The returned text is the original, not a normalised copy.
    """
    if not isinstance(query, str):
        raise _refuse(f"expected a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise _refuse(f"longer than {MAX_QUERY_CHARS:,} characters")
    if not query.strip():
        raise _refuse("empty query")
    code = _check_reading(query)
    folded = unicodedata.normalize("NFKC", query)
    if folded != query:
        _check_reading(folded)
    if code and code[-1].text == ";":  # the one allowed ';' ends the statement: drop it
        query = query[:code[-1].start] + query[code[-1].end:]
    return query.strip()


def is_read_only(query: str) -> bool:
    """``True`` when :func:`check_read_only` accepts ``query``."""
    try:
        check_read_only(query)
    except UnsafeQueryError:
        return False
    return True
