"""Time limits over FalkorDB's Bolt endpoint (issue 30 item 11b), on a real server.

That endpoint ignores transaction timeouts, so the only bound on a query there is the server's
``TIMEOUT_MAX``. Newer neo4j drivers (>= 5.26) turn the server's "Query timed out" into an
opaque ``UnknownError``; the store told the server's limit (``server_timeout_max``) reports it
as :class:`~kgrag.errors.QueryTimeoutError`, so ByoKG-RAG's feedback to the model names the time
budget. The newest 6.x driver runs in a subprocess (``.venv/neo4j-newest``, installed by
``scripts/setup.sh``), the venv's 5.25 in process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.errors import QueryTimeoutError
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.methods.byokg.query import execute_query

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[1]
NEWEST = REPO / ".venv" / "neo4j-newest"
#: a read that passes every budget and runs for seconds: 60^4 rows to count
SLOW_READ = "MATCH (a:Slow), (b:Slow), (c:Slow), (d:Slow) RETURN count(*) AS c"
LIMIT_MS = 400


@pytest.fixture(scope="module")
def limited_server(falkordb_server):
    """A throwaway server with ``TIMEOUT_MAX`` set (it applies to every client of a server)."""
    from db_server import FalkorDBServer

    server = FalkorDBServer().start()
    admin = FalkorDBGraphStore.from_url("127.0.0.1", server.port, graph="falkordb")
    admin._write("UNWIND range(1, 60) AS i CREATE (:Slow {i: i})")
    assert admin.set_server_timeouts(max_ms=LIMIT_MS)["TIMEOUT_MAX"] == LIMIT_MS
    admin.close()
    yield server
    server.stop()


def _feedback(uri: str) -> dict:
    """What a Bolt store with the server's limit says about a read the server times out."""
    store = Neo4jGraphStore.from_uri(uri, server_timeout_max=LIMIT_MS / 1000)
    try:
        try:
            store.run_cypher(SLOW_READ, timeout=30)
            raised = "nothing"
        except Exception as exc:  # reported below
            raised = type(exc).__name__
        alive = store._read("RETURN 1") == [[1]]
        return {"raised": raised, "feedback": execute_query(store, SLOW_READ).error,
                "alive": alive}
    finally:
        store.close()


def test_a_bolt_timeout_is_a_timeout_with_the_venv_driver(limited_server):
    out = _feedback(limited_server.bolt_uri)
    assert out["raised"] == QueryTimeoutError.__name__, out
    assert "time budget" in out["feedback"], out
    assert out["alive"] and limited_server.alive()


def test_a_bolt_timeout_is_a_timeout_with_the_newest_driver(limited_server):
    """The 6.x driver reports the server's timeout as UnknownError; the store maps it."""
    if not (NEWEST / "neo4j").is_dir():
        reason = f"{NEWEST} missing (bash scripts/setup.sh installs the newest neo4j 6.x there)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    script = (
        "import json, sys, neo4j\n"
        "from db_server import patch_neo4j_goodbye\n"
        "patch_neo4j_goodbye()\n"
        "assert neo4j.__version__.startswith('6.'), neo4j.__version__\n"
        "from test_bolt_time_limits import _feedback\n"
        "print(json.dumps(_feedback(sys.argv[1])))\n")
    path = os.pathsep.join([str(NEWEST), str(REPO / "shared"), str(REPO), str(REPO / "tests")])
    run = subprocess.run([sys.executable, "-c", script, limited_server.bolt_uri],
                         env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["raised"] == QueryTimeoutError.__name__, out
    assert "time budget" in out["feedback"], out
    assert out["alive"] and limited_server.alive()


def test_the_store_warns_once_that_bolt_ignores_transaction_timeouts(limited_server, caplog):
    with caplog.at_level(logging.WARNING, logger="kgrag.graph.cypher.neo4j"):
        store = Neo4jGraphStore.from_uri(limited_server.bolt_uri)
        store.has_node("x")
        store.one_hop(["x"])
    warned = [r.getMessage() for r in caplog.records if "TIMEOUT_MAX" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "server_timeout_max" in warned[0] and "keeps running" in warned[0]
    store.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kgrag.graph.cypher.neo4j"):
        told = Neo4jGraphStore.from_uri(limited_server.bolt_uri, server_timeout_max=0.4)
        told.has_node("x")
    assert not [r for r in caplog.records if "TIMEOUT_MAX" in r.getMessage()]
    told.close()
