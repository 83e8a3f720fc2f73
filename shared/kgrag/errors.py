"""Typed errors raised by kgrag.

Every error kgrag raises on purpose derives from :class:`KgragError`, so callers can catch the
library's failures without catching programming errors.
"""

from __future__ import annotations


class KgragError(Exception):
    """Base class of every error kgrag raises deliberately."""


class GraphFormatError(KgragError, ValueError):
    """A triples file (or iterable) holds a record that cannot be read as (head, relation, tail)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        elif line is not None:
            where = f"record {line}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class GraphLoadError(KgragError):
    """A saved graph or index directory is missing, corrupted, or not a kgrag directory."""


class ConfigurationError(KgragError, ValueError):
    """A user-supplied option is malformed (e.g. a ``package.module:factory`` spec)."""


class _SuggestingKeyError(KgragError, KeyError):
    """A ``KeyError`` whose message may end with "did you mean ...?".

    ``suggest=(name, known_names)`` defers the fuzzy search over the known names until the
    message is read, so code that catches the error and moves on never pays for it.
    """

    _default = "unknown name"

    def __init__(self, *args: object, suggest: tuple[str, object] | None = None) -> None:
        super().__init__(*args)
        self._suggest = suggest
        self._text: str | None = None

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        if self._text is None:
            text = str(self.args[0]) if self.args else self._default
            if self._suggest is not None:
                from kgrag.text.suggest import did_you_mean

                name, choices = self._suggest
                text += did_you_mean(str(name), choices)  # type: ignore[arg-type]
            self._text = text
        return self._text


class UnknownNodeError(_SuggestingKeyError):
    """A node name or id is not in the graph."""

    _default = "unknown node"


class UnknownRelationError(_SuggestingKeyError):
    """A relation name or id is not in the graph."""

    _default = "unknown relation"


class EmptyGraphWarning(UserWarning):
    """A graph file holds no triples (empty, only a header, every line skipped): emitted with
    :func:`warnings.warn` as well as logged, so it shows without any logging setup."""


class EmptyInputError(KgragError, ValueError):
    """There is nothing to build from: e.g. documents that hold no text to index."""


class InvalidQuestionError(KgragError, TypeError, ValueError):
    """A question that is not a non-empty string (``123``, a list, a dict, ``""``, blanks).

    Both a ``TypeError`` (the wrong type) and a ``ValueError`` (an empty string), so code that
    catches either keeps working."""


class UnknownMethodError(_SuggestingKeyError):
    """A method name that is not registered (``retriever_for("foo")``); the message lists the
    registered ones and suggests the closest."""

    _default = "unknown method"


class LLMNotConfiguredError(KgragError):
    """A step needs an LLM and none was passed."""


class LLMCallError(KgragError, RuntimeError):
    """The LLM call itself failed in a way that is not a network or provider error the caller
    should see as-is (e.g. a scripted fake model that ran out of replies)."""


class LLMOutputError(KgragError, ValueError):
    """An LLM reply could not be parsed into what the step needs (after any bounded retries)."""


class UnsafeQueryError(KgragError, ValueError):
    """A graph query (e.g. LLM-written Cypher) was refused: it could write or call procedures."""


class EmbeddingError(KgragError):
    """The embedding model could not be loaded or returned vectors of the wrong shape."""


class GraphDatabaseError(KgragError):
    """A graph database (Neo4j, FalkorDB) could not be reached or failed to run a query."""


class QueryTimeoutError(GraphDatabaseError, TimeoutError):
    """A graph database query ran longer than its timeout and was abandoned."""


class QueryBudgetError(UnsafeQueryError):
    """Untrusted Cypher was refused because it could exceed a budget (rows, generated elements,
    time) in a way the server would not stop; the message says how to rewrite it."""


class ResultTooLargeError(QueryBudgetError):
    """A query's result grew past the store's byte budget; reading stopped and the connection
    was dropped (the message says how large the budget is and how to ask for less)."""


class QueryParameterError(GraphDatabaseError, ValueError):
    """A query parameter was refused before sending: the backend could not pass it exactly and
    safely (a map key that is not a plain name, a float the server would round, a type the
    client would write as text, NUL ...)."""


class GraphFileNotFoundError(GraphFormatError, FileNotFoundError):
    """A triples file or graph directory does not exist (also a ``FileNotFoundError``)."""
