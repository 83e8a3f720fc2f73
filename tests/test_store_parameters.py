"""Query parameters that a FalkorDB path would turn into query text are refused, on a real server.

FalkorDB's Python client writes parameters into a ``CYPHER name=value`` header; its Bolt
endpoint splices them into a 4,096-byte buffer, map keys bare and floats with ``%f`` (see
:mod:`kgrag.graph.cypher.params`). Each case runs through both stores against a throwaway
FalkorDB server (a regression could crash it) and checks the server is alive and unchanged
afterwards. Issue 30 items 0b (map-key injection), 6 (floats over Bolt) and 10 (the client's
``ValueError`` for a backtick in a map key).
"""

from __future__ import annotations

import pytest

from kgrag.errors import GraphDatabaseError, QueryParameterError
from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from kgrag.graph.cypher.params import SPLICED_TEXT_MAX_BYTES, plain_parameters, spliced_size

pytestmark = pytest.mark.server

INJECT_READ = "a:1} MATCH (m) RETURN count(m) AS x //"
INJECT_WRITE = "a:1} CREATE (:Pwned) RETURN 1 AS x //"


@pytest.fixture(scope="module")
def server(own_falkordb_server):
    """This module's throwaway server (on the old code several of these cases crashed it)."""
    return own_falkordb_server


@pytest.fixture(scope="module")
def stores(server):
    redis = FalkorDBGraphStore.from_url("127.0.0.1", server.port, graph="falkordb")
    redis._write("MATCH (n) DETACH DELETE n")
    redis._write("CREATE (:Thing {name: 'a'}), (:Thing {name: 'b'})")
    bolt = Neo4jGraphStore.from_uri(server.bolt_uri)  # Bolt uses graph key "falkordb" too
    yield {"falkordb": redis, "neo4j-bolt": bolt}
    redis.close()
    bolt.close()


def _unchanged(server, stores) -> None:
    """The server still runs, answers on both protocols, and holds only the two nodes."""
    assert server.alive(), server.log_tail()
    for store in stores.values():
        assert store._read("MATCH (n) RETURN count(n)") == [[2]]
        assert store._read("MATCH (n:Pwned) RETURN count(n)") == [[0]]


@pytest.mark.parametrize("params", [
    {"x": {INJECT_READ: 1}},
    {"x": [1, {INJECT_READ: 1}]},
    {"x": {"ok": [{"y": {INJECT_WRITE: 1}}]}},
    {"x": {INJECT_WRITE: 1}},
], ids=["map", "list-of-maps", "nested", "write"])
def test_map_keys_cannot_inject_cypher_over_bolt(server, stores, params):
    """0b: the Bolt endpoint writes map keys bare; only plain ASCII names are sent there."""
    with pytest.raises(QueryParameterError, match="map key"):
        stores["neo4j-bolt"].run_cypher("RETURN $x AS x", params)
    with pytest.raises(QueryParameterError, match="map key"):
        stores["neo4j-bolt"]._read("RETURN $x AS x", params)
    # the Redis-protocol client backtick-quotes keys: the key is data there, never query text
    rows = stores["falkordb"].run_cypher("RETURN $x AS x", params)
    assert rows == [params]
    _unchanged(server, stores)


def test_plain_map_keys_and_values_still_pass(server, stores):
    value = {"name": "Tokyo", "n_2": [1, -2, 2**63 - 1], "score": 0.5, "big": 1e300,
             "flag": True, "none": None, "inner": [{"a": "b c"}]}
    for kind, store in stores.items():
        assert store.run_cypher("RETURN $x AS x", {"x": value}) == [{"x": value}], kind
    _unchanged(server, stores)


def test_a_backtick_in_a_map_key_is_a_typed_error(server, stores):
    """10: the falkordb client raised a bare ValueError for it."""
    for store in stores.values():
        with pytest.raises(QueryParameterError, match="map key .a`b."):
            store.run_cypher("RETURN $x AS x", {"x": {"a`b": 1}})
    _unchanged(server, stores)


@pytest.mark.parametrize("value", [1 / 3, 1e-7, 2.5e-300, 123456789.12345679],
                         ids=["third", "1e-7", "2.5e-300", "many-digits"])
def test_floats_bolt_would_round_are_refused(server, stores, value):
    """6: FalkorDB's Bolt endpoint writes floats with %f (1/3 -> 0.333333, 1e-7 -> 0.0)."""
    with pytest.raises(QueryParameterError, match="6 decimals"):
        stores["neo4j-bolt"].run_cypher("RETURN $x AS x", {"x": [value]})
    redis = stores["falkordb"]
    assert redis._read(f"RETURN $x = {value!r}", {"x": value}) == [[True]]  # exact there
    _unchanged(server, stores)


def test_the_splice_guard_measures_what_the_server_builds(server, stores):
    """6: twenty 1e300 floats are 167 bytes of JSON but 6,200 bytes of %f text: they crashed
    the server; a long query with one small parameter overflows the same buffer."""
    bolt = stores["neo4j-bolt"]
    with pytest.raises(QueryParameterError, match="fixed-size buffer"):
        bolt.run_cypher("RETURN $x AS x", {"x": [1e300] * 20})
    long_query = "RETURN $x AS x" + " " * 4000
    with pytest.raises(QueryParameterError, match="fixed-size buffer"):
        bolt._read(long_query, {"x": 1})
    assert bolt.run_cypher("RETURN $x AS x", {"x": [1e300] * 5}) == [{"x": [1e300] * 5}]
    assert stores["falkordb"].run_cypher("RETURN $x AS x", {"x": [1e300] * 20})[0]["x"] == \
        [1e300] * 20
    _unchanged(server, stores)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**64, object(), {1: "a"}],
                         ids=["nan", "inf", "int65", "object", "int-key"])
def test_values_no_falkordb_path_can_carry_are_typed_errors(server, stores, value):
    for store in stores.values():
        with pytest.raises(QueryParameterError):
            store.run_cypher("RETURN $x AS x", {"x": value})
    _unchanged(server, stores)


def test_parameter_errors_stay_graph_database_and_value_errors():
    """Callers catching the old types (GraphDatabaseError for refused values, ValueError for
    bad names and the client's key error) still catch the typed error."""
    assert issubclass(QueryParameterError, GraphDatabaseError)
    assert issubclass(QueryParameterError, ValueError)


def test_spliced_size_mirrors_the_server_text():
    # CYPHER x=[1, 'a', {k: 0.500000}, NULL, true] RETURN $x
    text = "CYPHER x=[1, 'a', {k: 0.500000}, NULL, true] RETURN $x"
    assert spliced_size("RETURN $x", {"x": [1, "a", {"k": 0.5}, None, True]}) == len(text)
    assert SPLICED_TEXT_MAX_BYTES < 4096
    with pytest.raises(QueryParameterError, match="ASCII"):
        spliced_size("RETURN 1", {"ünï": 1})
    assert plain_parameters({"x": (1, b"b")}) == {"x": [1, "b"]}
