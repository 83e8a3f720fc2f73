"""The graph database backends by name: what ``kgrag load-db`` / ``index-db --backend`` offer.

One :class:`Backend` per database names its store class and the function that opens a store
from :class:`ConnectionOptions`, both as ``"module:attribute"`` strings imported on first use,
so listing the backends imports no database client. A new backend adds one
:func:`register_backend` call below (or in its own package, for a third-party backend) and a
``connect(options)`` function next to its store class; the command line then offers it with
no change.

>>> sorted(backend_names())
['falkordb', 'neo4j']
>>> get_backend("neo4j").requires
('uri',)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from kgrag.errors import GraphDatabaseError


@dataclass(frozen=True)
class ConnectionOptions:
    """Where a database is and how to log in; each backend reads the fields it understands.

    ``mapping`` holds the store's graph mapping (``node_label``, ``name_property``,
    ``relation_property``, ``relationship_type``; see
    :class:`~kgrag.graph.cypher.store.CypherGraphStore`).
    """

    uri: str | None = None
    host: str = "localhost"
    port: int = 6379
    graph: str = "kgrag"
    username: str | None = None
    password: str | None = None
    database: str | None = None
    mapping: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Backend:
    """A graph database kgrag can load into and read from."""

    name: str
    #: ``"module:Class"`` of the store (a :class:`~kgrag.graph.base.GraphStore`)
    store: str
    #: ``"module:function"`` opening a store from :class:`ConnectionOptions`
    connect: str
    #: :class:`ConnectionOptions` fields that must be set (checked before anything is read)
    requires: tuple[str, ...] = ()
    #: an example value per required field, for the error message
    examples: Mapping[str, str] = field(default_factory=dict)

    def missing(self, options: ConnectionOptions) -> str | None:
        """A message naming the first required option ``options`` lacks, or ``None``."""
        for name in self.requires:
            if not getattr(options, name):
                example = self.examples.get(name)
                hint = f" (e.g. {example})" if example else ""
                return f"--backend {self.name} needs --{name}{hint}"
        return None

    def store_class(self) -> type:
        return _resolve(self.store)

    def open(self, options: ConnectionOptions) -> Any:
        """A store connected as ``options`` say; :class:`GraphDatabaseError` when an option the
        backend needs is missing or the server cannot be reached."""
        problem = self.missing(options)
        if problem:
            raise GraphDatabaseError(problem)
        return _resolve(self.connect)(options)


_BACKENDS: dict[str, Backend] = {}


def register_backend(backend: Backend) -> None:
    """Offer ``backend`` under its name (replacing one of the same name)."""
    _BACKENDS[backend.name] = backend


def backend_names() -> tuple[str, ...]:
    """The registered backends' names, in registration order."""
    return tuple(_BACKENDS)


def get_backend(name: str) -> Backend:
    try:
        return _BACKENDS[name]
    except KeyError:
        raise GraphDatabaseError(f"no graph backend {name!r} (known: {', '.join(_BACKENDS)})"
                                 ) from None


def _resolve(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


register_backend(Backend("falkordb", "kgrag.graph.cypher.falkordb:FalkorDBGraphStore",
                         "kgrag.graph.cypher.falkordb:connect"))
register_backend(Backend("neo4j", "kgrag.graph.cypher.neo4j:Neo4jGraphStore",
                         "kgrag.graph.cypher.neo4j:connect", requires=("uri",),
                         examples={"uri": "neo4j://localhost:7687"}))
