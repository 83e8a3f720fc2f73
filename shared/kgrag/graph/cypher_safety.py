"""Refuse Cypher that could write, call procedures or administer the database.

LLM-written Cypher (ByoKG-RAG, GraphRAFT) is untrusted input. It is checked *before* it is sent;
the stores then also run it in read transactions (Neo4j READ access mode, FalkorDB
``GRAPH.RO_QUERY``), so the check and the server are two independent locks.

How the check works:

1. The text is NFKC-normalised (full-width ``ＣＲＥＡＴＥ`` becomes ``CREATE``, ligatures and
   compatibility characters fold) and refused outright if it holds control or invisible
   formatting characters (zero-width spaces, bidi overrides) other than tab / newline / CR,
   because those can hide a keyword from a reader and from a tokenizer alike.
2. A small scanner removes comments (``// ...``, ``/* ... */``), string literals (single or
   double quoted, with backslash escapes) and backtick-quoted names, so ``WHERE n.name =
   'CREATE'`` or a label called ```DELETE``` is not mistaken for a clause. An unterminated
   string, comment or quoted name is refused (the text cannot be analysed reliably).
3. A ``;`` followed by anything is refused (one statement only).
4. The remaining words are compared, case-insensitively, with the keywords of writing, procedure
   and administration clauses (``CREATE``, ``MERGE``, ``SET``, ``DELETE``, ``DETACH``,
   ``REMOVE``, ``DROP``, ``CALL``, ``LOAD``, ``FOREACH``, ``USE``, ``GRANT``, ...) and with the
   namespaces of procedure libraries (``apoc.``, ``dbms.``, ``gds.``, ``db.``).

The check is deliberately strict: a property named ``set`` (``n.set``) or any ``CALL``
(even a read-only procedure or subquery) is refused too. Refusing a harmless query costs one
retry of the LLM; accepting a harmful one costs the database.

>>> is_read_only("MATCH (n {name: 'CREATE'}) RETURN n LIMIT 5")
True
>>> check_read_only("MATCH (n) DETACH DELETE n")
Traceback (most recent call last):
...
kgrag.errors.UnsafeQueryError: refused Cypher: it contains the clause keyword 'DETACH' (write, procedure or admin clauses are not allowed)
"""

from __future__ import annotations

import re
import unicodedata

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

_ALLOWED_CONTROL = {"\t", "\n", "\r"}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAMESPACE_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*[A-Za-z_]")


def _refuse(reason: str) -> UnsafeQueryError:
    return UnsafeQueryError(f"refused Cypher: {reason}")


def strip_literals_and_comments(query: str) -> str:
    """``query`` with comments removed and strings / backtick names replaced by placeholders.

    Strings become ``''`` and quoted names become ``_q_`` so the token structure stays intact.
    Raises :class:`UnsafeQueryError` for an unterminated string, comment or quoted name.
    """
    out: list[str] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        two = query[i:i + 2]
        if two == "//":
            end = query.find("\n", i)
            i = n if end < 0 else end
            out.append(" ")
        elif two == "/*":
            end = query.find("*/", i + 2)
            if end < 0:
                raise _refuse("unterminated /* comment")
            i = end + 2
            out.append(" ")
        elif ch in "'\"":
            j = i + 1
            while j < n and query[j] != ch:
                j += 2 if query[j] == "\\" else 1
            if j >= n:
                raise _refuse("unterminated string literal")
            i = j + 1
            out.append(" '' ")
        elif ch == "`":
            j = i + 1
            while True:
                j = query.find("`", j)
                if j < 0:
                    raise _refuse("unterminated `quoted name`")
                if query[j + 1:j + 2] == "`":  # `` is an escaped backtick inside the name
                    j += 2
                    continue
                break
            i = j + 1
            out.append(" _q_ ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def check_read_only(query: str) -> str:
    """Return the NFKC-normalised ``query`` if it is a single read-only statement; else raise.

    Raises :class:`~kgrag.errors.UnsafeQueryError` naming the reason (see the module docstring).
    """
    if not isinstance(query, str):
        raise _refuse(f"expected a string, got {type(query).__name__}")
    text = unicodedata.normalize("NFKC", query)
    for ch in text:
        if ch in _ALLOWED_CONTROL:
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"):
            raise _refuse(f"it contains the invisible or control character U+{ord(ch):04X}")
    if not text.strip():
        raise _refuse("empty query")
    code = strip_literals_and_comments(text)
    semicolon = code.find(";")
    if semicolon >= 0 and code[semicolon + 1:].strip():
        raise _refuse("more than one statement")
    for match in _NAMESPACE_CALL.finditer(code):
        if match.group(1).lower() in FORBIDDEN_NAMESPACES:
            raise _refuse(f"it calls into the {match.group(1)!r} namespace")
    for word in _WORD.findall(code):
        if word.upper() in FORBIDDEN_KEYWORDS:
            raise _refuse(f"it contains the clause keyword {word.upper()!r} "
                          "(write, procedure or admin clauses are not allowed)")
    return text.rstrip().rstrip(";").rstrip()


def is_read_only(query: str) -> bool:
    """``True`` when :func:`check_read_only` accepts ``query``."""
    try:
        check_read_only(query)
    except UnsafeQueryError:
        return False
    return True
