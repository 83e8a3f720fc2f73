"""A GraphStore on FalkorDB through its Python client (Redis protocol).

Every operation is parameterised Cypher (see :mod:`kgrag.graph.cypher.store`) sent with
``GRAPH.RO_QUERY`` -- the server itself refuses writes there -- and FalkorDB's per-query
``TIMEOUT``. Client failures become :class:`~kgrag.errors.GraphDatabaseError`;
a server-side timeout becomes :class:`~kgrag.errors.QueryTimeoutError`.

Time budgets: FalkorDB checks a query's timeout between operations; a server configured with
``TIMEOUT_MAX`` refuses a per-query timeout above it, and the store then retries with the
server's own limit. ``TIMEOUT_MAX`` / ``TIMEOUT_DEFAULT`` are also what bounds queries on
FalkorDB's Bolt endpoint, which ignores transaction timeouts: see :meth:`server_timeouts` and
docs/graph-databases.md.

    store = FalkorDBGraphStore.from_url("localhost", 6379, graph="movies")
    store.one_hop(["Tokyo Godfathers"])

Differences from Neo4j that the store handles: FalkorDB has no uniqueness constraints (an
index on the name is created instead), and its parser does not accept doubled backticks, so a
label, property or relation name containing a backtick is refused with ``ValueError`` (store
such relations with ``relation_property=...``). The client writes parameters into the query as
text, so parameters it cannot write exactly (a backtick in a map key, ``nan``, integers beyond
64 bits, other types) are refused with :class:`~kgrag.errors.QueryParameterError`
(:func:`kgrag.graph.cypher.params.plain_parameters`).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Mapping, Sequence

from kgrag.errors import GraphDatabaseError, QueryTimeoutError
from kgrag.graph.backends import ConnectionOptions
from kgrag.graph.base import TripleSource
from kgrag.graph.cypher.load import load_triples
from kgrag.graph.cypher.params import plain_parameters
from kgrag.graph.cypher.result_budget import BudgetedSocket, read_resp2
from kgrag.graph.cypher.store import (
    CypherGraphStore,
    Row,
    SearchIndex,
    call_with_deadline,
)

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """FalkorDB client objects -> plain Python (nodes and edges become property dicts)."""
    from falkordb import Edge, Node
    from falkordb import Path as FPath

    if isinstance(value, Node):
        return dict(value.properties)
    if isinstance(value, Edge):
        return {"type": value.relation, **dict(value.properties)}
    if isinstance(value, FPath):
        return [_plain(n) for n in value.nodes()]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


#: Characters with a meaning in RediSearch query syntax (FalkorDB's full-text engine).
_REDISEARCH_SPECIAL = set(",.<>{}[]\"':;!@#$%^&*()-+=~|/\\ ")


def redisearch_escape(text: str) -> str:
    """``text`` with every RediSearch query operator character backslash-escaped."""
    return "".join("\\" + c if c in _REDISEARCH_SPECIAL else c for c in str(text))


def redisearch_query(tokens: Sequence[str]) -> str:
    """An OR query over word ``tokens``: each token, plus a fuzzy (edit distance 1) variant of
    tokens of 3+ characters (``%tok%``). FalkorDB's English analyser stems, so "godfather"
    also finds "Godfathers"."""
    terms: list[str] = []
    for tok in tokens:
        esc = redisearch_escape(tok)
        terms.append(esc)
        if len(tok) >= 3:
            terms.append(f"%{esc}%")
    return "|".join(terms)


class FalkorDBGraphStore(CypherGraphStore):
    """GraphStore over a FalkorDB graph.

    Parameters:
        graph: a ``falkordb.Graph`` (from ``FalkorDB(...).select_graph(name)``).
        client: the ``falkordb.FalkorDB`` it came from, closed by :meth:`close` when
            ``owns_client`` is true.
        **mapping: node label, name property, relation storage, batch size, timeout; see
            :class:`~kgrag.graph.cypher.store.CypherGraphStore`.
    """

    backend = "falkordb"

    def __init__(self, graph: Any, *, client: Any = None, owns_client: bool = False,
                 **mapping: Any) -> None:
        self._graph = graph
        self._client = client
        self._owns_client = owns_client
        super().__init__(**mapping)

    @classmethod
    def from_url(cls, host: str = "localhost", port: int = 6379, *, graph: str = "kgrag",
                 username: str | None = None, password: str | None = None,
                 socket_timeout: float | None = 120.0, connect_timeout: float = 10.0,
                 **mapping: Any) -> "FalkorDBGraphStore":
        """Connect to a FalkorDB server and select (or lazily create) graph ``graph``.

        ``socket_timeout`` bounds how long the client waits for any reply, so a server that
        stops answering raises instead of hanging. Raises :class:`GraphDatabaseError` when the
        server cannot be reached.
        """
        import redis.exceptions as rx
        from falkordb import FalkorDB

        try:  # the client connects (and checks the module) while it is built
            client = FalkorDB(host=host, port=port, username=username, password=password,
                              socket_timeout=socket_timeout,
                              socket_connect_timeout=connect_timeout)
        except rx.RedisError as exc:
            raise GraphDatabaseError(f"connecting: cannot reach FalkorDB at {host}:{port}: "
                                     f"{exc}") from exc
        store = cls(client.select_graph(graph), client=client, owns_client=True, **mapping)
        store._where_text = f"{host}:{port}/{graph}"
        try:
            with store._errors("connecting"):
                client.connection.ping()
        except GraphDatabaseError:
            store.close()
            raise
        return store

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):
                self._client.connection.close()
            self._client = None

    def __repr__(self) -> str:
        return (f"FalkorDBGraphStore({getattr(self, '_where_text', self._graph.name)}, "
                f"label={self.node_label!r}, name_property={self.name_property!r})")

    # ------------------------------------------------------------------ plumbing
    def _quote(self, identifier: str) -> str:
        if not isinstance(identifier, str) or not identifier or "\x00" in identifier:
            raise ValueError(f"not a usable Cypher name: {identifier!r}")
        if "`" in identifier:
            raise ValueError(f"FalkorDB cannot quote a name containing a backtick: {identifier!r}"
                             " (store relation names in a property: relation_property=...)")
        return f"`{identifier}`"

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        import redis.exceptions as rx

        where = getattr(self, "_where_text", f"FalkorDB graph {self._graph.name!r}")
        try:
            yield
        except GraphDatabaseError:
            raise
        except rx.TimeoutError as exc:
            raise QueryTimeoutError(f"{what}: no answer from {where}: {exc}") from exc
        except rx.ConnectionError as exc:
            raise GraphDatabaseError(f"{what}: cannot reach {where}: {exc}") from exc
        except rx.ResponseError as exc:
            if "timed out" in str(exc).lower():
                raise QueryTimeoutError(f"{what}: the server timed out: {exc}") from exc
            raise GraphDatabaseError(f"{what}: {exc}") from exc
        except rx.RedisError as exc:
            raise GraphDatabaseError(f"{what}: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _ms(timeout: float | None) -> int | None:
        return None if timeout is None else max(1, int(timeout * 1000))

    def _read(self, query: str, params: Mapping[str, Any] | None = None,
              timeout: float | None = None) -> list[Row]:
        timeout = timeout if timeout is not None else self.timeout
        result = self._ro_query(query, params, timeout, "graph query")
        return [list(row) for row in result.result_set]

    def _ro_query(self, query: str, params: Mapping[str, Any] | None, timeout: float | None,
                  what: str, *, budget: bool = False, max_bytes: int | None = None) -> Any:
        """GRAPH.RO_QUERY with the server's timeout, and a client deadline a little later.

        A server whose ``TIMEOUT_MAX`` is below ``timeout`` refuses the query; it is then sent
        without a timeout, so the server's maximum applies. With ``budget`` (untrusted queries) the
        reply is read through a :class:`~kgrag.graph.cypher.result_budget.BudgetedSocket`: at most
        ``max_bytes`` bytes, and the read is cancelled when the deadline passes. """
        import redis.exceptions as rx

        plain = plain_parameters(params)
        reading: dict[str, Any] = {}
        budgeted = budget and self._pool() is not None

        def send(ms: int | None) -> Any:
            if budgeted:
                return self._budgeted_ro_query(query, plain, ms, max_bytes, reading, what)
            return self._graph.ro_query(query, plain, timeout=ms)

        def run() -> Any:
            with self._errors(what):
                try:
                    return send(self._ms(timeout))
                except rx.ResponseError as exc:
                    if "TIMEOUT_MAX" not in str(exc):
                        raise
                    return send(None)

        def cancel() -> None:
            reading["cancelled"] = True
            sock = reading.get("socket")
            if sock is not None:
                sock.cancel()

        deadline = None if timeout is None else timeout + self.client_grace_seconds
        return call_with_deadline(run, deadline, what, on_timeout=cancel)

    def _pool(self) -> Any:
        """The redis connection pool under the graph's client (``None`` when there is none,
        e.g. a cluster client: untrusted queries then run without the byte budget)."""
        pool = getattr(getattr(getattr(self._graph, "client", None), "connection", None),
                       "connection_pool", None)
        return pool if hasattr(pool, "get_connection") and hasattr(pool, "release") else None

    def _budgeted_ro_query(self, query: str, plain: dict[str, Any], ms: int | None,
                           max_bytes: int | None, reading: dict[str, Any], what: str) -> Any:
        """Send GRAPH.RO_QUERY on a pooled connection and read the reply through a
        :class:`BudgetedSocket` (:func:`read_resp2`); a reply not read to its end (too large,
        cancelled, broken) drops the connection instead of returning it to the pool."""
        import redis.exceptions as rx
        from falkordb.query_result import QueryResult

        pool = self._pool()
        try:
            conn = pool.get_connection()
        except TypeError:  # redis-py < 5.3 wants the command name
            conn = pool.get_connection("GRAPH.RO_QUERY")
        sock = None
        try:
            conn.connect()
            sock = BudgetedSocket(conn._sock, max_bytes)
            reading["socket"] = sock
            if reading.get("cancelled"):
                sock.cancel()
            command: list[Any] = ["GRAPH.RO_QUERY", self._graph.name,
                                  self._graph._build_params_header(plain) + query, "--compact"]
            if ms is not None:
                command += ["timeout", ms]
            conn.send_command(*command)
            reply = read_resp2(sock, rx.ResponseError)
        except rx.ResponseError:
            pool.release(conn)  # an error reply read whole: the connection is in step
            raise
        except BaseException as exc:
            conn.disconnect()
            pool.release(conn)
            if sock is not None and sock.exceeded:
                raise sock.too_large(what) from None
            if isinstance(exc, TimeoutError):  # the client's socket_timeout
                raise rx.TimeoutError(f"reading the reply: {exc}") from exc
            if isinstance(exc, OSError):
                raise rx.ConnectionError(f"reading the reply: {exc}") from exc
            if isinstance(exc, UnicodeDecodeError):
                raise GraphDatabaseError(f"{what}: the server sent text that is not UTF-8: "
                                         f"{exc}") from exc
            raise
        pool.release(conn)
        return QueryResult(self._graph, reply)

    def _write(self, query: str, params: Mapping[str, Any] | None = None) -> dict[str, int]:
        plain = plain_parameters(params)
        with self._errors("write"):
            result = self._graph.query(query, plain)
        return {"nodes_created": int(result.nodes_created),
                "relationships_created": int(result.relationships_created)}

    def _run_user_query(self, query: str, params: Mapping[str, Any], limit: int,
                        timeout: float | None, max_bytes: int | None) -> list[dict[str, Any]]:
        """Runs with GRAPH.RO_QUERY and the server timeout; the reply (which the FalkorDB
        protocol sends whole) is read within ``max_bytes`` and cut to ``limit`` rows here."""
        result = self._ro_query(query, params, timeout, "Cypher query", budget=True,
                                max_bytes=max_bytes)
        header = [str(h[1]) if isinstance(h, (list, tuple)) else str(h) for h in result.header]
        return [dict(zip(header, (_plain(v) for v in row))) for row in result.result_set[:limit]]

    def server_timeouts(self) -> dict[str, int]:
        """The server's ``TIMEOUT``, ``TIMEOUT_DEFAULT`` and ``TIMEOUT_MAX`` (ms; 0 = none).

        ``TIMEOUT_MAX`` bounds every query, including those on the Bolt endpoint (which ignores
        transaction timeouts); set it at start-up (``--loadmodule falkordb.so TIMEOUT_MAX
        30000``) or with :meth:`set_server_timeouts`.
        """
        out: dict[str, int] = {}
        with self._errors("reading the server's timeouts"):
            for name in ("TIMEOUT", "TIMEOUT_DEFAULT", "TIMEOUT_MAX"):
                reply = self._graph.execute_command("GRAPH.CONFIG", "GET", name)
                if reply and isinstance(reply[0], (list, tuple)):
                    reply = reply[0]
                out[name] = int(reply[1]) if reply and len(reply) > 1 else 0
        return out

    def set_server_timeouts(self, *, default_ms: int | None = None,
                            max_ms: int | None = None) -> dict[str, int]:
        """Set the server's ``TIMEOUT_DEFAULT`` / ``TIMEOUT_MAX`` (an administrator's action:
        it applies to every client of the server); returns :meth:`server_timeouts`."""
        with self._errors("setting the server's timeouts"):
            if max_ms is not None:
                self._graph.execute_command("GRAPH.CONFIG", "SET", "TIMEOUT_MAX", int(max_ms))
            if default_ms is not None:
                self._graph.execute_command("GRAPH.CONFIG", "SET", "TIMEOUT_DEFAULT",
                                            int(default_ms))
        return self.server_timeouts()

    # ------------------------------------------------------------------ streaming and indexes
    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        """Every node name, paged by internal node id (``batch_size`` names per query).

        Unlike the Neo4j store this does not de-duplicate: two nodes with one name (possible
        only in data not loaded by kgrag) yield the name twice.
        """
        after = -1
        query = (f"MATCH {self._node('n')} WHERE ID(n) > $after AND {self._has_name('n')} "
                 f"RETURN ID(n) AS id, n.{self._prop} AS name ORDER BY id LIMIT $batch")
        while True:
            rows = self._read(query, {"after": after, "batch": batch_size})
            for _, name in rows:
                yield name
            if len(rows) < batch_size:
                return
            after = rows[-1][0]

    # ------------------------------------------------------------------ search indexes
    def search_indexes(self) -> list[SearchIndex]:
        """Operational full-text / vector indexes on ``node_label``'s name property.

        Read with ``CALL db.indexes()`` (one row per label: ``types`` maps each property to its
        index kinds, e.g. ``['RANGE', 'FULLTEXT']``). An index still under construction is left out
        (it would return partial results). A vector index is named by the property holding the
        embeddings (``vector_index="embedding"``). FalkorDB indexes are per label, so with
        ``node_label=None`` no index covers every node and none is returned. """
        if not self.node_label:
            return []
        try:
            result = self._ro_query("CALL db.indexes()", None, self.timeout, "listing indexes")
        except GraphDatabaseError as exc:
            log.info("db.indexes() failed (%s); no database index used", exc)
            return []
        header = [str(h[1]) if isinstance(h, (list, tuple)) else str(h) for h in result.header]
        found: list[SearchIndex] = []
        for row in result.result_set:
            info = dict(zip(header, row))
            if info.get("label") != self.node_label or info.get("entitytype", "NODE") != "NODE":
                continue
            # full-text: on the name
            kinds = (info.get("types") or {}).get(self.name_property) or []
            status = str(info.get("status", "OPERATIONAL"))
            if status != "OPERATIONAL":
                log.info("FalkorDB index on %s.%s not used: %s", self.node_label,
                         self.name_property, status)
                continue
            if "FULLTEXT" in kinds:
                found.append(SearchIndex("fulltext", self.node_label, self.node_label,
                                         self.name_property, "falkordb"))
            for prop, prop_kinds in sorted((info.get("types") or {}).items()):
                if "VECTOR" in (prop_kinds or []):  # named by its embedding property
                    options = dict((info.get("options") or {}).get(prop) or {})
                    found.append(SearchIndex("vector", str(prop), self.node_label, str(prop),
                                             "falkordb", tuple(sorted(options.items()))))
        return found

    def fulltext_search(self, index: SearchIndex, tokens: Sequence[str], limit: int
                        ) -> list[tuple[str, float]]:
        """``db.idx.fulltext.queryNodes`` with :func:`redisearch_query` (RediSearch TF-IDF)."""
        text = redisearch_query(tokens)
        if not text:
            return []
        rows = self._read(
            f"CALL db.idx.fulltext.queryNodes($label, $query) YIELD node, score "
            f"WITH node.{self._prop} AS name, score WHERE name IS NOT NULL "
            f"RETURN name, score ORDER BY score DESC, name LIMIT $limit",
            {"label": index.label, "query": text, "limit": int(limit)})
        return [(str(name), float(score)) for name, score in rows]

    def _cosine(self, var: str, prop: str, param: str) -> str:
        """``1 - vec.cosineDistance``: FalkorDB's cosine distance turned into the cosine."""
        return f"(1.0 - vec.cosineDistance({var}.{prop}, vecf32(${param})))"

    def vector_search(self, index: SearchIndex, vector: Sequence[float], k: int, *,
                      breadth: int | None = None) -> list[tuple[str, float]]:
        """``db.idx.vector.queryNodes``; FalkorDB returns a *distance*, turned into a similarity
        in [0, 1]: cosine index ``1 - d``; euclidean index (unit vectors) ``1 - d^2 / 2``."""
        rows = self._read(
            f"CALL db.idx.vector.queryNodes($label, $prop, $k, vecf32($vec)) YIELD node, score "
            f"WITH node.{self._prop} AS name, score WHERE name IS NOT NULL "
            f"RETURN name, score ORDER BY score, name LIMIT $keep",
            {"label": index.label, "prop": index.property, "k": max(int(k), int(breadth or 0)),
             "keep": int(k),
             "vec": [float(x) for x in vector]})
        function = str(dict(index.options).get("similarityFunction", "euclidean")).lower()
        out = []
        for name, distance in rows:
            d = float(distance)
            sim = 1.0 - d if function == "cosine" else 1.0 - d * d / 2.0
            out.append((str(name), min(max(sim, 0.0), 1.0)))
        return out

    def ensure_name_index(self) -> str:
        """Create an index on the name property (FalkorDB has no uniqueness constraints)."""
        if not self._label:
            return "no index (node_label is None)"
        try:
            self._write(f"CREATE INDEX FOR (n{self._label}) ON (n.{self._prop})")
        except GraphDatabaseError as exc:
            if "already indexed" not in str(exc):
                raise
        return "index"


def to_falkordb(kg: TripleSource, target: Any = "localhost", port: int = 6379, *,
                graph: str = "kgrag", batch_size: int = 5000, progress: bool = True,
                **mapping: Any) -> Any:
    """Write ``kg`` into FalkorDB and return a
    :class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore`.

    ``target``: a host name (with ``port`` and graph key ``graph``) or a ``falkordb.Graph``.
    The :class:`~kgrag.graph.cypher.load.LoadSummary` is on the store as ``load_summary``.
    """
    if isinstance(target, str):
        store = FalkorDBGraphStore.from_url(target, port, graph=graph, **mapping)
    else:
        store = FalkorDBGraphStore(target, **mapping)
    store.load_summary = load_triples(store, kg, batch_size=batch_size, progress=progress)
    return store


def connect(options: ConnectionOptions) -> FalkorDBGraphStore:
    """The store the backend registry opens (:mod:`kgrag.graph.backends`): ``options.host``,
    ``port``, ``graph``, ``password`` and the graph mapping (``username`` is Neo4j's: the
    command line's ``--username`` defaults to ``$NEO4J_USERNAME``)."""
    return FalkorDBGraphStore.from_url(options.host, options.port, graph=options.graph,
                                       password=options.password, **options.mapping)

