"""Query parameters checked against how a backend will really send them, before anything is sent.

Parameters exist so that values never become query text. Two FalkorDB paths turn them into text
anyway, so the stores check what those paths would build:

* **FalkorDB's Python client** (Redis protocol,
  :class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore`) writes a ``CYPHER name=value ...``
  header in front of the query: strings quoted and escaped, map keys in backticks (a key holding a
  backtick raises the client's own ``ValueError``), and every other value with ``str()``. So ``nan``
  / ``inf`` arrive as names, an integer beyond 64 bits is clamped or refused by the server, and an
  object of another type is written as whatever its ``str()`` says. :func:`plain_parameters` returns
  the parameters as plain Python values the client writes exactly (numpy numbers become ``int`` /
  ``float``), or refuses.
* **FalkorDB's Bolt endpoint** (:class:`~kgrag.graph.cypher.neo4j.Neo4jGraphStore` on FalkorDB)
  receives parameters properly, then splices them into a 4,096-byte stack buffer as text:
  ``CYPHER name=value ... <query>``, strings in single quotes *unescaped*, map keys *bare*,
  floats with C's ``%f``. A map key ``"a:1} MATCH (m) RETURN count(m) AS x //"`` ran the query
  it spelled; ``1/3`` arrived as ``0.333333`` and ``1e-7`` as ``0.0``; ``1e300`` is written as
  308 digits, so twenty of them (167 bytes of JSON) overflowed the buffer and crashed the
  server. :func:`spliced_size` refuses every value the splice cannot carry exactly and returns
  the size of the text the server will build, for the store's size guard.

A real Neo4j sends parameters apart from the text: none of this applies to it (the Neo4j store
runs the splice check only after probing that the server splices). Every refusal is a
:class:`~kgrag.errors.QueryParameterError` naming the parameter (``$x.key[3]``).
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Mapping

from kgrag.errors import QueryParameterError

#: A name the FalkorDB Bolt splice can write bare: ASCII letters, digits, underscore.
_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

#: Size of the buffer FalkorDB's Bolt endpoint splices ``CYPHER <params> <query>`` into.
SPLICE_BUFFER_BYTES = 4096
#: Largest spliced text the Neo4j store sends to such a server (a margin under the buffer).
SPLICED_TEXT_MAX_BYTES = 3800


def _refuse(path: str, why: str) -> QueryParameterError:
    return QueryParameterError(f"query parameter {path}: {why}")


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise _refuse(path, f"holds a NUL character, which the server would cut the value at: "
                            f"{text[:60]!r}")


def _int64(value: Any, path: str) -> int:
    number = int(value)
    if not INT64_MIN <= number <= INT64_MAX:
        raise _refuse(path, f"the integer {number} does not fit in 64 bits (the server would "
                            "clamp or refuse it)")
    return number


def _finite(value: Any, path: str) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise _refuse(path, f"{number!r} cannot be sent as a Cypher parameter (the value would "
                            "be read as a name)")
    return number


def _unsupported(value: Any, path: str, backend: str) -> QueryParameterError:
    return _refuse(path, f"a {type(value).__name__} cannot be passed to {backend} exactly; "
                         "send None, bool, int, float, str, lists or maps of them")


# ---------------------------------------------------------------------- Redis protocol client
def plain_parameters(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` as plain Python values FalkorDB's client writes exactly, or
    :class:`~kgrag.errors.QueryParameterError`.

    Map keys must be non-empty strings without a backtick (the client backtick-quotes them and
    cannot escape one); values None, bool, str (or UTF-8 bytes), integers within 64 bits,
    finite floats, and lists / tuples / maps of them, at any depth.
    """
    return {str(name): _plain(value, f"${name}") for name, value in (params or {}).items()}


def _plain(value: Any, path: str) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        _check_text(value, path)
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse(path, "bytes that are not UTF-8 text (FalkorDB has no byte arrays)"
                          ) from None
        _check_text(text, path)
        return text
    if isinstance(value, numbers.Integral):
        return _int64(value, path)
    if isinstance(value, numbers.Real):
        return _finite(value, path)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise _refuse(path, f"map key {key!r}: FalkorDB map keys are non-empty strings")
            if "`" in key:
                raise _refuse(path, f"map key {key!r} holds a backtick, which FalkorDB cannot "
                                    "quote")
            _check_text(key, path)
            out[str(key)] = _plain(item, f"{path}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise _unsupported(value, path, "FalkorDB")


# ---------------------------------------------------------------------- Bolt endpoint splicing
def spliced_size(query: str, params: Mapping[str, Any]) -> int:
    """Bytes of the text a splicing Bolt server builds from ``query`` and ``params``, after
    refusing (:class:`~kgrag.errors.QueryParameterError`) what it cannot carry exactly.

    Mirrors FalkorDB's splice: ``CYPHER `` then ``name=value `` per parameter, then the query;
    lists as ``[a, b]``, maps as ``{key: value}``, strings as ``'text'``, floats as ``%f``.
    Refused: names and map keys that are not bare ASCII names, strings with ``'`` / ``\\`` /
    NUL, floats ``%f`` would change (``1/3``, ``1e-7``) or that are not finite, integers beyond
    64 bits, and every other type.
    """
    size = len("CYPHER ") + len(query.encode("utf-8"))
    for name, value in params.items():
        if not isinstance(name, str) or not _BARE_NAME.match(name):
            raise _refuse(f"${name}", "this Bolt server splices parameter names into the query "
                                      "text (a FalkorDB bug): only ASCII letters, digits and _")
        size += len(name) + 1 + _spliced_len(value, f"${name}") + 1
    return size


def _spliced_len(value: Any, path: str) -> int:
    if value is None:
        return len("NULL")
    if isinstance(value, bool):
        return len("true" if value else "false")
    if isinstance(value, str):
        _check_text(value, path)
        if "'" in value or "\\" in value:
            raise _refuse(path, f"this Bolt server splices parameters into the query text (a "
                                f"FalkorDB bug), so the value {value[:80]!r} (with a quote or "
                                "backslash) cannot be sent safely; use "
                                "kgrag.graph.cypher.falkordb.FalkorDBGraphStore for FalkorDB")
        return len(value.encode("utf-8")) + 2
    if isinstance(value, numbers.Integral):
        return len(str(_int64(value, path)))
    if isinstance(value, numbers.Real):
        number = _finite(value, path)
        text = "%f" % number
        if float(text) != number:
            raise _refuse(path, f"this Bolt server writes floats with 6 decimals (a FalkorDB "
                                f"bug): {number!r} would arrive as {text}; round it, or use "
                                "kgrag.graph.cypher.falkordb.FalkorDBGraphStore for FalkorDB")
        return len(text)
    if isinstance(value, Mapping):
        total = 2 + 2 * max(len(value) - 1, 0)
        for key, item in value.items():
            if not isinstance(key, str) or not _BARE_NAME.match(key):
                raise _refuse(path, f"map key {key!r}: this Bolt server splices map keys into "
                                    "the query text unquoted (a FalkorDB bug), so only ASCII "
                                    "letters, digits and _ are safe; use "
                                    "kgrag.graph.cypher.falkordb.FalkorDBGraphStore for FalkorDB")
            total += len(key) + 2 + _spliced_len(item, f"{path}.{key}")
        return total
    if isinstance(value, (list, tuple)):
        total = 2 + 2 * max(len(value) - 1, 0)
        return total + sum(_spliced_len(item, f"{path}[{i}]") for i, item in enumerate(value))
    raise _unsupported(value, path, "this splicing Bolt server")
