"""``run_cypher`` bounds the bytes a result brings, and a reader abandoned at the deadline stops.

Issue 30 item 5: one row holding two million strings (a 2.5 kB query) was received and parsed
whole, and after the caller's ``QueryTimeoutError`` the reader thread went on (client RSS
+200-250 MB per query). Both stores run against a throwaway real FalkorDB server (Redis protocol
and Bolt); after every case the server must be alive and the store must still answer.
``benchmarks/probe_result_budget_rss.py`` measures the RSS side.
"""

from __future__ import annotations

import threading
import time

import pytest

from kgrag.errors import QueryTimeoutError, ResultTooLargeError
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.graph.cypher.result_budget import MAX_RESULT_BYTES
from kgrag.methods.byokg.query import execute_query

pytestmark = pytest.mark.server

#: 100 nodes x 60,000 characters: 6 MB, over the 4 MiB default (each value stays under the
#: 64 KB that FalkorDB's Bolt endpoint can send in one message)
NODES, TEXT = 100, 60_000
READER = "kgrag-graph-query"


@pytest.fixture(scope="module")
def server(own_falkordb_server):
    """This module's throwaway server (an abandoned query may still run there)."""
    return own_falkordb_server


@pytest.fixture(scope="module")
def stores(server):
    redis = FalkorDBGraphStore.from_url("127.0.0.1", server.port, graph="falkordb")
    redis._write("UNWIND range(1, $n) AS i CREATE (:Big {i: i, text: $text})",
                 {"n": NODES, "text": "x" * TEXT})
    redis._write("UNWIND range(1, 60) AS i CREATE (:Slow {i: i})")
    bolt = Neo4jGraphStore.from_uri(server.bolt_uri, server_timeout_max=600)
    yield {"falkordb": redis, "neo4j-bolt": bolt}
    redis.close()
    bolt.close()


def _answers(server, store) -> None:
    """The server runs and the store answers (no connection reused half-read)."""
    assert server.alive(), server.log_tail()
    assert store.run_cypher("MATCH (n:Big) RETURN count(n) AS c") == [{"c": NODES}]


def _new_readers_end(before: set[int], within: float) -> list[str]:
    """Reader threads started since ``before`` still running after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        alive = [t for t in threading.enumerate() if t.name == READER and t.ident not in before]
        if not alive or time.monotonic() > deadline:
            return [t.name for t in alive]
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
@pytest.mark.parametrize("query", [
    "MATCH (n:Big) RETURN n.text AS t",
    "MATCH (n:Big) RETURN collect(n.text) AS t",  # one row holding everything
], ids=["rows", "one-row"])
def test_a_result_over_the_byte_budget_stops_with_a_typed_error(server, stores, kind, query):
    store = stores[kind]
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(ResultTooLargeError, match="4,194,304 bytes"):
        store.run_cypher(query)
    assert store.max_result_bytes == MAX_RESULT_BYTES < NODES * TEXT
    assert _new_readers_end(before, 5.0) == []
    _answers(server, store)
    if kind == "neo4j-bolt" and "collect" in query:
        return  # FalkorDB's Bolt endpoint cannot send a message over 64 KB at all
    # a larger budget (per call) reads the same result whole
    rows = store.run_cypher(query, max_bytes=4 * NODES * TEXT)
    assert sum(len(r["t"]) if isinstance(r["t"], str) else len(r["t"]) * TEXT
               for r in rows) == NODES * TEXT
    _answers(server, store)


@pytest.mark.parametrize("kind", ["falkordb", "neo4j-bolt"])
def test_the_budget_is_configurable_and_byokg_feeds_it_back(server, stores, kind):
    store = stores[kind]
    with pytest.raises(ResultTooLargeError, match="100,000 bytes"):
        store.run_cypher("MATCH (n:Big) WHERE n.i <= 3 RETURN n.text AS t", max_bytes=100_000)
    store.max_result_bytes = 100_000
    try:
        feedback = execute_query(store, "MATCH (n:Big) WHERE n.i <= 3 RETURN n.text AS t")
        assert "100,000 bytes" in feedback.error and "aggregate" in feedback.error
        assert len(store.run_cypher("MATCH (n:Big) WHERE n.i = 1 RETURN n.text AS t")) == 1
    finally:
        store.max_result_bytes = MAX_RESULT_BYTES
    _answers(server, store)


def test_a_bolt_reader_abandoned_at_the_deadline_stops(server, stores):
    """FalkorDB's Bolt endpoint ignores the transaction timeout: the server goes on counting
    for seconds; the reader thread must not wait for it."""
    bolt = stores["neo4j-bolt"]
    bolt.client_grace_seconds = 0.2
    before = {t.ident for t in threading.enumerate()}
    try:
        with pytest.raises(QueryTimeoutError):
            bolt.run_cypher("MATCH (a:Slow), (b:Slow), (c:Slow), (d:Slow) RETURN count(*) AS c",
                            timeout=0.3)
    finally:
        bolt.client_grace_seconds = 5.0
    assert _new_readers_end(before, 2.0) == []
    _answers(server, bolt)


def test_a_redis_reader_abandoned_at_the_deadline_stops(server, stores):
    """A server that does not answer (here: paused) leaves the reader blocked on its socket;
    the deadline shuts the socket down."""
    from falkordb import FalkorDB

    redis = stores["falkordb"]
    redis.client_grace_seconds = 0.2
    admin = FalkorDB(host="127.0.0.1", port=server.port)
    before = {t.ident for t in threading.enumerate()}
    try:
        admin.connection.execute_command("CLIENT", "PAUSE", 5000, "ALL")
        with pytest.raises(QueryTimeoutError):
            redis.run_cypher("RETURN 1 AS x", timeout=0.3)
        assert _new_readers_end(before, 2.0) == []
    finally:
        redis.client_grace_seconds = 5.0
        admin.connection.execute_command("CLIENT", "UNPAUSE")
        admin.close()
    _answers(server, redis)


def test_the_resp2_reader_decodes_like_the_client_and_stops_at_the_budget():
    import socket

    from redis.exceptions import ResponseError

    from kgrag.graph.cypher.result_budget import BudgetedSocket, read_resp2

    ours, server = socket.socketpair()
    try:
        server.sendall(b"*3\r\n:1\r\n$4\r\nab\xc3\xa9\r\n*2\r\n$-1\r\n-ERR late\r\n")
        reply = read_resp2(BudgetedSocket(ours, None), ResponseError)
        assert reply[:2] == [1, "abé"] and reply[2][0] is None
        assert isinstance(reply[2][1], ResponseError) and str(reply[2][1]) == "ERR late"
        server.sendall(b"-ERR top\r\n")
        with pytest.raises(ResponseError, match="ERR top"):
            read_resp2(BudgetedSocket(ours, None), ResponseError)
        server.sendall(b"$20\r\n" + b"x" * 20 + b"\r\n")
        budgeted = BudgetedSocket(ours, 10)
        with pytest.raises(OSError):
            read_resp2(budgeted, ResponseError)
        assert budgeted.exceeded and budgeted.received > 10
    finally:
        ours.close()
        server.close()
