"""A GraphStore on Neo4j (or any server speaking Bolt and Cypher), through the official driver.

Every operation is parameterised Cypher (see :mod:`kgrag.graph.cypher.store`) run in an
explicit transaction of a READ access-mode session, with a server-side transaction timeout and a
client-side deadline, so a hung server gives :class:`~kgrag.errors.QueryTimeoutError` instead of
a hang. Driver failures become :class:`~kgrag.errors.GraphDatabaseError` naming the server.

Build it from a ``langchain_neo4j.Neo4jGraph`` (its driver and database are reused), from a
``neo4j.Driver``, or from a URI and credentials::

    store = Neo4jGraphStore.from_uri("neo4j://localhost:7687", "neo4j", "secret")
    store.one_hop(["Tokyo Godfathers"])

Linking against the database graph (:func:`kgrag.linking.database.linker_for_store`) queries a
Neo4j full-text index on the name property when there is one (and a vector index when asked to),
else builds a local index from :meth:`iter_node_names`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from kgrag.errors import GraphDatabaseError, QueryParameterError, QueryTimeoutError
from kgrag.graph.backends import ConnectionOptions
from kgrag.graph.base import TripleSource
from kgrag.graph.cypher import params as cypher_params
from kgrag.graph.cypher.load import load_triples
from kgrag.graph.cypher.result_budget import BudgetedSocket
from kgrag.graph.cypher.store import (
    CypherGraphStore,
    Row,
    SearchIndex,
    call_with_deadline,
    refuse_nul_parameters,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Largest text (``CYPHER <parameters> <query>``) sent to a server that splices parameters into
#: the query text: FalkorDB's Bolt endpoint builds it in a 4,096-byte buffer.
SPLICED_TEXT_MAX_BYTES = cypher_params.SPLICED_TEXT_MAX_BYTES


#: The code newer drivers (>= 5.26, Bolt 5.7) give every failure of a server that sends no GQL
#: status, such as FalkorDB's Bolt endpoint: the server's own code and message are dropped.
_OPAQUE_CODE = "Neo.DatabaseError.General.UnknownError"


def _undecodable(exc: UnicodeDecodeError, tx: Any, what: str) -> GraphDatabaseError:
    """A typed error for a server message that is not valid UTF-8, after dropping the connection.

    FalkorDB's Bolt endpoint cuts long error messages at a byte count, sometimes inside a
    multi-byte character (e.g. a syntax error quoting ``СREATE`` with a Cyrillic С); the driver
    then raises ``UnicodeDecodeError`` half-way through a message, and the connection's stream is
    out of step: rolling the transaction back would wait forever for a reply. The connection is
    killed (no rollback, no GOODBYE) and the text is decoded with replacement characters.
    """
    connection = getattr(tx, "_connection", None)
    with contextlib.suppress(Exception):
        if connection is not None:
            connection.kill()
    raw = exc.object if isinstance(exc.object, (bytes, bytearray)) else b""
    text = bytes(raw).decode("utf-8", errors="replace")
    return GraphDatabaseError(f"{what}: the server sent a message that is not valid UTF-8 "
                              f"(decoded with replacement characters): {text[:300]}")


def _budget_reads(tx: Any, max_bytes: int | None) -> BudgetedSocket | None:
    """Put a :class:`BudgetedSocket` under the reader of ``tx``'s connection (the driver's
    ``inbox``, the same in neo4j 5.x and 6.x); ``None``, with a warning, for a driver whose
    reader is laid out differently (the query then runs without a byte budget)."""
    inbox = getattr(getattr(tx, "_connection", None), "inbox", None)
    sock = getattr(inbox, "_socket", None)
    if inbox is None or sock is None or not hasattr(sock, "recv_into"):
        if not _budget_unavailable_warned:
            _budget_unavailable_warned.append(True)
            log.warning("this neo4j driver's reader is not where kgrag looks for it: untrusted "
                        "queries run without the result byte budget")
        return None
    budgeted = BudgetedSocket(sock, max_bytes)
    inbox._socket = budgeted
    return budgeted


def _unbudget_reads(tx: Any, budgeted: BudgetedSocket) -> None:
    inbox = getattr(getattr(tx, "_connection", None), "inbox", None)
    if inbox is not None and getattr(inbox, "_socket", None) is budgeted:
        inbox._socket = budgeted._sock


_budget_unavailable_warned: list[bool] = []


#: Characters with a meaning in Lucene query syntax (Neo4j full-text indexes).
_LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/ ')


def lucene_escape(text: str) -> str:
    """``text`` with every Lucene query operator character backslash-escaped."""
    return "".join("\\" + c if c in _LUCENE_SPECIAL else c for c in str(text))


def lucene_query(tokens: Sequence[str]) -> str:
    """An OR query over word ``tokens``: each (escaped) token, plus a fuzzy variant ``tok~``
    (edit distance up to 2) of tokens of 4+ characters. Tokens are lower-case words, so Lucene's
    upper-case ``AND``/``OR``/``NOT`` operators cannot arise from them."""
    terms: list[str] = []
    for tok in tokens:
        esc = lucene_escape(tok)
        terms.append(esc)
        if len(tok) >= 4:
            terms.append(f"{esc}~")
    return " ".join(terms)


class Neo4jGraphStore(CypherGraphStore):
    """GraphStore over Bolt: Neo4j, Neo4j Aura, or another Bolt + Cypher server.

    Parameters:
        driver: a ``neo4j.Driver``.
        database: database name (``None``: the server's default).
        owns_driver: close the driver in :meth:`close` (True when built by :meth:`from_uri`).
        server_timeout_max: seconds after which the *server* ends any query on its own, for a
            server that ignores transaction timeouts (FalkorDB's Bolt endpoint: its
            ``TIMEOUT_MAX``). Over Bolt such a timeout arrives from newer drivers (>= 5.26) as
            an opaque ``UnknownError``; one arriving after at least this long is reported as
            :class:`~kgrag.errors.QueryTimeoutError`. Without it, the store warns once, when it
            finds such a server, that an abandoned query keeps running there.
        **mapping: node label, name property, relation storage, batch size, timeout; see
            :class:`~kgrag.graph.cypher.store.CypherGraphStore`.
    """

    backend = "neo4j"

    def __init__(self, driver: Any, *, database: str | None = None, owns_driver: bool = False,
                 server_timeout_max: float | None = None, **mapping: Any) -> None:
        self._driver = driver
        self.database = database
        self._owns_driver = owns_driver
        self.server_timeout_max = server_timeout_max
        # learnt at connect (from_uri) or on first use; see _check_params and _probe_splicing
        self._splices_params: bool | None = None
        self._falkordb_bolt: bool | None = None  # learnt on first use, see cypher_backend
        super().__init__(**mapping)

    @classmethod
    def from_uri(cls, uri: str, username: str | None = None, password: str | None = None, *,
                 database: str | None = None, connection_timeout: float = 10.0,
                 max_transaction_retry_time: float = 5.0, **mapping: Any) -> "Neo4jGraphStore":
        """Connect to ``uri`` (``bolt://``, ``neo4j://``, ``neo4j+s://`` ...).

        No credentials (``username=None``) connects without authentication. Raises
        :class:`GraphDatabaseError` when the server cannot be reached.
        """
        import neo4j

        auth = None if username is None else (username, password or "")
        try:
            driver = neo4j.GraphDatabase.driver(
                uri, auth=auth, connection_timeout=connection_timeout,
                max_transaction_retry_time=max_transaction_retry_time)
        except (ValueError, neo4j.exceptions.ConfigurationError) as exc:
            raise GraphDatabaseError(f"bad Neo4j URI {uri!r}: {exc}") from exc
        store = cls(driver, database=database, owns_driver=True, **mapping)
        store._where_text = uri
        try:
            with store._errors("connecting"):
                call_with_deadline(driver.verify_connectivity, connection_timeout + 5.0,
                                    f"connecting to {uri}")
            store._splices_params = store._probe_splicing()
        except GraphDatabaseError:
            store.close()
            raise
        return store

    @classmethod
    def from_langchain(cls, graph: Any, **mapping: Any) -> "Neo4jGraphStore":
        """Reuse the driver and database of a ``langchain_neo4j.Neo4jGraph``."""
        driver = getattr(graph, "_driver", None)
        if driver is None:
            raise TypeError(f"expected a langchain_neo4j.Neo4jGraph, got {type(graph).__name__}")
        return cls(driver, database=getattr(graph, "_database", None), **mapping)

    def close(self) -> None:
        if self._owns_driver and self._driver is not None:
            self._driver.close()
            self._driver = None

    def __repr__(self) -> str:
        return (f"Neo4jGraphStore({getattr(self, '_where_text', 'driver')}, "
                f"label={self.node_label!r}, name_property={self.name_property!r})")

    # ------------------------------------------------------------------ plumbing
    def _quote(self, identifier: str) -> str:
        if not isinstance(identifier, str) or not identifier or "\x00" in identifier:
            raise ValueError(f"not a usable Cypher name: {identifier!r}")
        return "`" + identifier.replace("`", "``") + "`"

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        import neo4j.exceptions as ex

        where = getattr(self, "_where_text", "the Neo4j server")
        started = time.monotonic()
        try:
            yield
        except GraphDatabaseError:
            raise
        except (ex.ServiceUnavailable, ex.SessionExpired, ConnectionError, OSError) as exc:
            raise GraphDatabaseError(f"{what}: cannot reach {where}: {exc}") from exc
        except ex.Neo4jError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Timeout" in code or "timed out" in str(exc):
                raise QueryTimeoutError(f"{what}: the server timed out: {exc.message}") from exc
            limit = self.server_timeout_max
            if (limit is not None and code == _OPAQUE_CODE
                    and time.monotonic() - started >= limit):
                raise QueryTimeoutError(
                    f"{what}: the server's time limit ({limit:g} s, its TIMEOUT_MAX) ended the "
                    f"query (the server's error reached this driver as {code})") from exc
            raise GraphDatabaseError(f"{what}: {code or 'error'}: {exc.message}") from exc
        except ex.DriverError as exc:
            raise GraphDatabaseError(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _check_params(self, query: str, params: Mapping[str, Any] | None) -> None:
        """Refuse parameters a server would not pass safely and exactly.

        A Bolt server must send parameters apart from the query text. FalkorDB's Bolt endpoint
        (4.x) instead splices them into the text, unescaped, into a 4,096-byte buffer (see
        :mod:`kgrag.graph.cypher.params`): a string with a quote or backslash, or a map key
        that is not a bare name, can inject Cypher; floats lose digits; a text over the buffer
        crashes the server. The store probes once, on the first query with parameters
        (``RETURN $probe`` with a quote in it, which a correct server echoes), and on such a
        server refuses those values with :class:`~kgrag.errors.QueryParameterError` (use
        :class:`~kgrag.graph.cypher.falkordb.FalkorDBGraphStore` for FalkorDB, or a smaller
        ``batch_size``). On a server that passes parameters properly only NUL is refused.
        """
        if not params:
            return
        refuse_nul_parameters(params)
        if self._splices_params is None:
            self._splices_params = self._probe_splicing()
        if not self._splices_params:
            return
        size = cypher_params.spliced_size(query, params)
        if size > SPLICED_TEXT_MAX_BYTES:
            raise QueryParameterError(
                f"this Bolt server splices query parameters into a fixed-size buffer (a FalkorDB "
                f"bug) and the {size}-byte query text it would build (over "
                f"{SPLICED_TEXT_MAX_BYTES}) could crash it; use a smaller batch_size "
                f"(now {self.batch_size}) or kgrag.graph.cypher.falkordb.FalkorDBGraphStore")

    def cypher_backend(self) -> str:
        """``"falkordb-bolt"`` on FalkorDB's Bolt endpoint, else ``"neo4j"``.

        FalkorDB's Bolt reply writer aborts the whole server on a temporal value, so untrusted
        Cypher for it is checked with that backend's rules. Its agent string (``Neo4j/5.13.0``)
        cannot tell it from Neo4j; a probe can: ``RETURN vecf32([1.0])`` (a FalkorDB function)
        answers there and fails on Neo4j. Probed once, on the first untrusted query.
        """
        if self._falkordb_bolt is None:
            self._falkordb_bolt = self._probe_falkordb()
        return "falkordb-bolt" if self._falkordb_bolt else "neo4j"

    def _probe_falkordb(self) -> bool:
        import neo4j.exceptions as ex

        def run() -> Any:
            with self._session(read=True) as session:
                with session.begin_transaction(timeout=10) as tx:
                    return tx.run("RETURN vecf32([1.0]) AS probe").single()[0]

        with self._errors("probing the server kind"):
            try:
                call_with_deadline(run, 15.0, "probing the server kind")
            except ex.Neo4jError:  # unknown function: not FalkorDB
                return False
        return True

    def _probe_splicing(self) -> bool:
        import neo4j.exceptions as ex

        probe = "kgrag'probe\\"

        def run() -> Any:
            with self._session(read=True) as session:
                with session.begin_transaction(timeout=10) as tx:
                    return tx.run("RETURN $probe AS probe", probe=probe).single()[0]

        with self._errors("probing parameter handling"):
            try:
                splices = call_with_deadline(run, 15.0, "probing parameter handling") != probe
            except ex.DatabaseError:  # the quote broke the spliced query text
                splices = True
        if splices:
            log.warning("%r splices parameters into the query text (FalkorDB's Bolt endpoint): "
                        "strings with quotes or backslashes, map keys that are not plain names "
                        "and floats it would round are refused", self)
            if self.server_timeout_max is None:
                log.warning(
                    "%r is FalkorDB's Bolt endpoint, which ignores transaction timeouts: a query "
                    "this store abandons after its timeout (QueryTimeoutError) keeps running on "
                    "the server until it ends. Give the server a time limit -- start it with "
                    "'--loadmodule falkordb.so TIMEOUT_MAX 30000', or run 'GRAPH.CONFIG SET "
                    "TIMEOUT_MAX 30000' (FalkorDBGraphStore.set_server_timeouts(max_ms=30000)) -- "
                    "and pass server_timeout_max=30 to this store so the server's timeouts are "
                    "reported as timeouts", self)
        return splices

    def _session(self, read: bool) -> Any:
        import neo4j

        if self._driver is None:
            raise GraphDatabaseError("the store is closed")
        mode = neo4j.READ_ACCESS if read else neo4j.WRITE_ACCESS
        return self._driver.session(database=self.database, default_access_mode=mode)

    def _in_read_tx(self, work: Callable[[Any], T], timeout: float | None, what: str,
                    on_timeout: Callable[[], None] | None = None) -> T:
        def run() -> T:
            with self._errors(what), self._session(read=True) as session:
                with session.begin_transaction(timeout=timeout) as tx:
                    try:
                        return work(tx)
                    except UnicodeDecodeError as exc:
                        raise _undecodable(exc, tx, what) from exc

        deadline = None if timeout is None else timeout + self.client_grace_seconds
        return call_with_deadline(run, deadline, what, on_timeout=on_timeout)

    def _read(self, query: str, params: Mapping[str, Any] | None = None,
              timeout: float | None = None) -> list[Row]:
        self._check_params(query, params)
        return self._in_read_tx(
            lambda tx: [list(rec.values()) for rec in tx.run(query, dict(params or {}))],
            timeout if timeout is not None else self.timeout, "graph query")

    def _write(self, query: str, params: Mapping[str, Any] | None = None) -> dict[str, int]:
        def work(tx: Any) -> dict[str, int]:
            c = tx.run(query, dict(params or {})).consume().counters
            return {"nodes_created": c.nodes_created,
                    "relationships_created": c.relationships_created}

        self._check_params(query, params)
        with self._errors("write"), self._session(read=False) as session:
            return session.execute_write(work)

    def _run_user_query(self, query: str, params: Mapping[str, Any], limit: int,
                        timeout: float | None, max_bytes: int | None) -> list[dict[str, Any]]:
        """Records are read through a :class:`~kgrag.graph.cypher.result_budget.BudgetedSocket` put
        under the driver's reader: past ``max_bytes`` received, or when the deadline passes,
        the read stops and the driver drops the connection (one record can be huge: the row
        cap alone does not bound what is received and unpacked)."""
        reading: dict[str, Any] = {}

        def work(tx: Any) -> list[dict[str, Any]]:
            sock = _budget_reads(tx, max_bytes)
            reading["socket"] = sock
            if sock is not None and reading.get("cancelled"):
                sock.cancel()
            try:
                rows = []
                for rec in tx.run(query, dict(params)):
                    rows.append(rec.data())
                    if len(rows) >= limit:
                        break  # the transaction is rolled back; the server discards the rest
                return rows
            finally:
                if sock is not None:
                    _unbudget_reads(tx, sock)

        def cancel() -> None:
            reading["cancelled"] = True
            if reading.get("socket") is not None:
                reading["socket"].cancel()

        self._check_params(query, params)
        try:
            return self._in_read_tx(work, timeout, "Cypher query", on_timeout=cancel)
        except Exception as exc:
            sock = reading.get("socket")
            if sock is not None and sock.exceeded:
                raise sock.too_large("Cypher query") from exc
            raise

    # ------------------------------------------------------------------ streaming and indexes
    def iter_node_names(self, batch_size: int = 10_000) -> Iterator[str]:
        """Every node name, streamed from one read transaction ``batch_size`` records at a time."""
        import neo4j

        if self._driver is None:
            raise GraphDatabaseError("the store is closed")
        query = (f"MATCH {self._node('n')}{self._where(self._has_name('n'))} "
                 f"RETURN DISTINCT n.{self._prop} AS name")
        with self._errors("streaming node names"):
            with self._driver.session(database=self.database,
                                      default_access_mode=neo4j.READ_ACCESS,
                                      fetch_size=batch_size) as session:
                with session.begin_transaction() as tx:
                    for record in tx.run(query):
                        yield record[0]

    # ------------------------------------------------------------------ search indexes
    def search_indexes(self) -> list[SearchIndex]:
        """ONLINE full-text indexes on the name property and vector indexes of ``node_label``.

        Read with ``SHOW INDEXES`` (Neo4j 4.2+, no APOC). A server without it (e.g. FalkorDB
        over Bolt) has none as far as this store knows.
        """
        try:
            rows = self._read(
                "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties, state "
                "WHERE type IN ['FULLTEXT', 'VECTOR'] AND entityType = 'NODE' "
                "RETURN name, type, labelsOrTypes, properties, state")
        except GraphDatabaseError as exc:
            log.info("SHOW INDEXES failed (%s); no database index used", exc)
            return []
        found: list[SearchIndex] = []
        for name, kind, labels, props, state in rows:
            if self.node_label is not None and self.node_label not in (labels or []):
                continue
            if state != "ONLINE":
                log.info("Neo4j index %r not used: state %s", name, state)
                continue
            if kind == "FULLTEXT" and self.name_property in (props or []):
                found.append(SearchIndex("fulltext", str(name), self.node_label,
                                         self.name_property, "neo4j"))
            elif kind == "VECTOR" and props:
                found.append(SearchIndex("vector", str(name), self.node_label, str(props[0]),
                                         "neo4j", (("similarityFunction",
                                                    self._vector_function(str(name))),)))
        return found

    def _vector_function(self, index: str) -> str:
        """``"cosine"`` or ``"euclidean"``: the similarity function of vector index ``index``."""
        rows = self._read("SHOW INDEXES YIELD name, options WHERE name = $name RETURN options",
                          {"name": index})
        config = ((rows[0][0] or {}).get("indexConfig") or {}) if rows else {}
        return str(config.get("vector.similarity_function", "cosine")).lower()

    def fulltext_search(self, index: SearchIndex, tokens: Sequence[str], limit: int
                        ) -> list[tuple[str, float]]:
        """``db.index.fulltext.queryNodes`` with :func:`lucene_query` (Lucene scores)."""
        text = lucene_query(tokens)
        if not text:
            return []
        rows = self._read(
            f"CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score "
            f"WITH node, node.{self._prop} AS name, score "
            f"WHERE name IS NOT NULL{' AND node' + self._label if self._label else ''} "
            f"RETURN name, score ORDER BY score DESC, name LIMIT $limit",
            {"index": index.name, "query": text, "limit": int(limit)})
        return [(str(name), float(score)) for name, score in rows]

    def _cosine(self, var: str, prop: str, param: str) -> str:
        """``2 s - 1`` of Neo4j's ``vector.similarity.cosine`` (``s = (1 + cos) / 2``), as in
        :meth:`vector_search`. A server without the function (FalkorDB over Bolt) raises, and
        the caller falls back to scoring in the client."""
        return f"(2.0 * vector.similarity.cosine({var}.{prop}, ${param}) - 1.0)"

    def vector_search(self, index: SearchIndex, vector: Sequence[float], k: int, *,
                      breadth: int | None = None) -> list[tuple[str, float]]:
        """``db.index.vector.queryNodes``; Neo4j's score ``s`` (cosine: ``(1 + cos) / 2``;
        euclidean: ``1 / (1 + d^2)``) mapped back to the cosine, clipped to [0, 1]: ``2 s - 1``,
        and for euclidean on unit vectors ``1 - (1 / s - 1) / 2``."""
        rows = self._read(
            f"CALL db.index.vector.queryNodes($index, $k, $vec) YIELD node, score "
            f"WITH node.{self._prop} AS name, score WHERE name IS NOT NULL "
            f"RETURN name, score ORDER BY score DESC, name LIMIT $keep",
            {"index": index.name, "k": max(int(k), int(breadth or 0)), "keep": int(k),
             "vec": [float(x) for x in vector]})
        euclidean = dict(index.options).get("similarityFunction") == "euclidean"
        out = []
        for name, score in rows:
            s = float(score)
            cos = (1.0 - (1.0 / s - 1.0) / 2.0 if s > 0 else 0.0) if euclidean else 2.0 * s - 1.0
            out.append((str(name), min(max(cos, 0.0), 1.0)))
        return out

    def ensure_name_index(self) -> str:
        """Create a uniqueness constraint on the name (Neo4j), or a plain index where the server
        has no constraints (e.g. FalkorDB over Bolt). Returns what was done."""
        label = self._label or ""
        if not label:
            return "no index (node_label is None)"
        constraint = (f"CREATE CONSTRAINT IF NOT EXISTS FOR (n{label}) "
                      f"REQUIRE n.{self._prop} IS UNIQUE")
        try:
            self._write(constraint)
            return "uniqueness constraint"
        except GraphDatabaseError as exc:
            log.info("server refused a uniqueness constraint (%s); creating a plain index", exc)
        try:
            self._write(f"CREATE INDEX FOR (n{label}) ON (n.{self._prop})")
        except GraphDatabaseError as exc:
            if "already indexed" not in str(exc):
                raise
        return "index"


def to_neo4j(kg: TripleSource, target: Any, username: str | None = None,
             password: str | None = None, *, database: str | None = None, batch_size: int = 5000,
             progress: bool = True, **mapping: Any) -> Any:
    """Write ``kg`` into Neo4j and return a :class:`~kgrag.graph.cypher.neo4j.Neo4jGraphStore` over
    it.

    ``target``: a Bolt URI (with ``username`` / ``password``), a ``langchain_neo4j.Neo4jGraph``
    or a ``neo4j.Driver``. ``mapping``: label / property / relation storage options of the
    store. The :class:`~kgrag.graph.cypher.load.LoadSummary` is on the store as ``load_summary``.
    """
    if isinstance(target, str):
        store = Neo4jGraphStore.from_uri(target, username, password, database=database, **mapping)
    elif hasattr(target, "_driver") and hasattr(target, "query"):  # a langchain Neo4jGraph
        store = Neo4jGraphStore.from_langchain(target, **mapping)
    else:
        store = Neo4jGraphStore(target, database=database, **mapping)
    store.load_summary = load_triples(store, kg, batch_size=batch_size, progress=progress)
    return store


def connect(options: ConnectionOptions) -> Neo4jGraphStore:
    """The store the backend registry opens (:mod:`kgrag.graph.backends`): ``options.uri``
    (required), ``username`` / ``password``, ``database`` and the graph mapping."""
    if not options.uri:
        raise GraphDatabaseError("Neo4j needs a URI (e.g. neo4j://localhost:7687)")
    return Neo4jGraphStore.from_uri(options.uri, options.username, options.password,
                                    database=options.database, **options.mapping)

