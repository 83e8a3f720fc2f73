"""The Cypher attack corpus (tests/data/cypher_attack_corpus.tsv) against a real FalkorDB server,
through both protocols, and the Cypher budgets (row cap, generators, server time limits).

One throwaway server per module holds a small graph under the key ``falkordb`` (the graph every
Bolt query uses), so the Redis-protocol store and the Bolt store see the same data. After every
case the server process must be alive and answer a trivial read, and the database's nodes, edges,
properties, labels, relationship types, property keys, indexes and graph keys are compared with a
fingerprint taken through the trusted Redis client. Over Bolt the store detects FalkorDB's
endpoint, so ``refuse@falkordb-bolt`` cases (temporal values, which abort that server) are
refused there and run over the Redis protocol.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kgrag.errors import GraphDatabaseError, QueryBudgetError, QueryTimeoutError, UnsafeQueryError
from kgrag.graph.cypher.budget import prepare_untrusted_query
from kgrag.graph.cypher.safety import check_read_only

CORPUS = Path(__file__).parent / "data" / "cypher_attack_corpus.tsv"

NAMES = ["Paprika", "Satoshi Kon", "Tokyo Godfathers", "Film²", "ﬁlm noir", "Ｔｏｋｙｏ", "Ⅷ",
         "Brand™", "½ cup", "Cafe\u0301", "👩\u200d💻 dev", "co\u00adop", "It's CREATE",
         "Keiko Nobumoto", "Madhouse", "2006"]
TRIPLES = [("Paprika", "directed_by", "Satoshi Kon"),
           ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
           ("Paprika", "release_year", "2006")]


#: Backends a ``refuse@<backend>`` case names (see the corpus header).
BACKENDS = ("falkordb-bolt",)


def load_corpus() -> list[tuple[str, str, str, str]]:
    cases = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        verdict, query, rows, note = line.split("\t")
        assert verdict in ("refuse", "allow") or verdict.removeprefix("refuse@") in BACKENDS, line
        cases.append((verdict, json.loads(query), rows, note))
    return cases


def verdict_for(verdict: str, backend: str | None) -> str:
    """``refuse`` or ``allow``: what a case expects from the check for ``backend``."""
    if verdict.startswith("refuse@"):
        return "refuse" if verdict == f"refuse@{backend}" else "allow"
    return verdict


CASES = load_corpus()


def test_corpus_size_and_must_allow_reads():
    assert len(CASES) >= 100
    allowed = {q for v, q, _, _ in CASES if v == "allow"}
    for needle in ("AS start", "AS use", "AS show", "AS copy", "n.set", "n.update", "db.name",
                   "algo.name", "\u200d", "\u00ad"):
        assert any(needle in q for q in allowed), needle


@pytest.mark.parametrize("backend", [None, "falkordb", "falkordb-bolt"])
@pytest.mark.parametrize("verdict,query,rows,note", CASES, ids=[c[3] for c in CASES])
def test_check_gives_the_corpus_verdict(verdict, query, rows, note, backend):
    if verdict_for(verdict, backend) == "refuse":
        with pytest.raises(UnsafeQueryError):
            prepare_untrusted_query(query, max_rows=100, backend=backend)
    else:
        sent = prepare_untrusted_query(query, max_rows=100, backend=backend)
        assert " LIMIT " in sent or rows == "error"  # no RETURN: nothing to cap
        assert check_read_only(query).rstrip() in (query.strip(), query.strip().rstrip(";").strip(),
                                                   query.replace(";", "", 1).strip())


def test_corpus_covers_the_attack_classes_of_issue_30():
    """Alias named ``as``, glued numbers, homoglyphs, expression work, nesting depth, row caps
    after aliases / UNION, and per-backend return types are all in the corpus."""
    notes = " | ".join(c[3] for c in CASES)
    for needle in ("alias named as, then CREATE", "alias named as, then SET label",
                   "alias named as, then SET map", "alias named as, then REMOVE property",
                   "alias named as, then DELETE edge", "alias named as, then MERGE",
                   "CALL of a backtick-quoted procedure", "number glued to CREATE",
                   "numbered parameter glued to CREATE", "hex number glued to MERGE",
                   "Cyrillic Es in CREATE", "Greek Epsilon in DELETE",
                   "combining grapheme joiner in CREATE", "range in backticks",
                   "nested comprehensions over an 800-element literal list",
                   "nested comprehensions over a collected list", "nested replace",
                   "parentheses nested 20 deep", "30 NOT", "CASE nested 16 deep",
                   "row cap after an alias named as", "LIMIT after an alias named as",
                   "UNION after an alias named as", "date() over FalkorDB Bolt",
                   "duration() over FalkorDB Bolt"):
        assert needle in notes, needle
    assert sum(c[0].startswith("refuse@") for c in CASES) >= 10


# ----------------------------------------------------------------------------- the server
@pytest.fixture(scope="module")
def server(own_falkordb_server):
    """This module's throwaway server (the corpus writes and explodes queries on purpose)."""
    return own_falkordb_server


@pytest.fixture(scope="module")
def stores(server):
    from db_server import patch_neo4j_goodbye

    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    patch_neo4j_goodbye()
    redis_store = FalkorDBGraphStore.from_url("127.0.0.1", server.port, graph="falkordb")
    redis_store.load_triples(TRIPLES, progress=False)
    for name in NAMES:
        redis_store._write("MERGE (:Entity {name: $name})", {"name": name})
    bolt_store = Neo4jGraphStore.from_uri(server.bolt_uri)
    yield {"redis": redis_store, "bolt": bolt_store}
    redis_store.close()
    bolt_store.close()


def fingerprint(store: Any) -> str:
    """Everything a write could change, read through the trusted Redis client."""
    graph = store._graph

    def rows(query: str) -> list:
        return [[_plain(v) for v in row] for row in graph.ro_query(query).result_set]

    state = {
        "nodes": rows("MATCH (n) RETURN id(n), labels(n), properties(n) ORDER BY id(n)"),
        "edges": rows("MATCH (a)-[r]->(b) RETURN id(r), type(r), id(a), id(b), properties(r) "
                      "ORDER BY id(r)"),
        "labels": rows("CALL db.labels()"),
        "types": rows("CALL db.relationshipTypes()"),
        "keys": rows("CALL db.propertyKeys()"),
        "indexes": rows("CALL db.indexes()"),
        "graphs": sorted(store._client.list_graphs()),
    }
    return json.dumps(state, sort_keys=True, default=str, ensure_ascii=False)


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@pytest.mark.server
@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_corpus_on_the_real_server_leaves_the_database_unchanged(server, stores, protocol):
    """Every case through one protocol; after each, the server is alive and answers a trivial
    read, and the database fingerprint (nodes, edges, properties, labels, types, property keys,
    indexes, graph keys) is unchanged. Over Bolt the store detects FalkorDB's endpoint and the
    per-backend rules apply (temporal values refused: they would abort the server)."""
    store = stores[protocol]
    backend = store.cypher_backend()
    assert backend == {"redis": "falkordb", "bolt": "falkordb-bolt"}[protocol]
    before = fingerprint(stores["redis"])
    assert json.loads(before)["nodes"] and json.loads(before)["indexes"]
    outcomes: dict[str, str] = {}
    for verdict, query, rows, note in CASES:
        expected = verdict_for(verdict, backend)
        try:
            result = store.run_cypher(query, limit=100, timeout=10)
        except UnsafeQueryError as exc:
            outcome = "refuse"
            assert expected == "refuse", f"{note}: refused: {exc}"
        except GraphDatabaseError as exc:
            outcome = "error"
            assert expected == "allow" and rows == "error", f"{note}: server error: {exc}"
        else:
            outcome = str(len(result))
            assert expected == "allow", f"{note}: {query!r} was run"
            assert rows == outcome, f"{note}: {query!r} returned {len(result)} rows"
        outcomes[note] = outcome
        assert server.alive(), f"{note}: the server died:\n{server.log_tail()}"
        assert store.run_cypher("RETURN 1 AS one") == [{"one": 1}], f"{note}: no answer after"
        assert fingerprint(stores["redis"]) == before, f"{note}: the database changed"
    assert store.run_cypher("MATCH (n:Pwned) RETURN count(n) AS c") == [{"c": 0}]
    assert sum(o == "refuse" for o in outcomes.values()) >= 165


@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_string_literals_are_executed_as_written(stores, protocol):
    store = stores[protocol]
    for name in ("Film²", "ﬁlm noir", "Ｔｏｋｙｏ", "Ⅷ", "Brand™", "½ cup", "Cafe\u0301",
                 "👩\u200d💻 dev", "co\u00adop"):
        rows = store.run_cypher(f"MATCH (n:Entity) WHERE n.name = '{name}' RETURN n.name AS x")
        assert rows == [{"x": name}], name


# ----------------------------------------------------------------------------- budgets
@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_row_cap_is_applied_by_the_server(stores, protocol):
    store = stores[protocol]
    rows = store.run_cypher("MATCH (a:Entity), (b:Entity), (c:Entity) RETURN a.name AS a",
                            limit=7)
    assert len(rows) == 7 and rows.truncated
    exact = store.run_cypher("MATCH (n:Entity) RETURN n.name AS n", limit=16)
    assert len(exact) == 16 and not exact.truncated
    lowered = store.run_cypher("UNWIND range(1, 50) AS x RETURN x LIMIT 40", limit=5)
    assert [r["x"] for r in lowered] == [1, 2, 3, 4, 5] and lowered.truncated


def test_limit_injection_text():
    def sent(q: str, **params: Any) -> str:
        return prepare_untrusted_query(q, params, max_rows=10)

    assert sent("MATCH (n) RETURN n") == "MATCH (n) RETURN n LIMIT 11"
    assert sent("MATCH (n) RETURN n // note") == "MATCH (n) RETURN n LIMIT 11 // note"
    assert sent("MATCH (n) RETURN n LIMIT 3") == "MATCH (n) RETURN n LIMIT 3"
    assert sent("MATCH (n) RETURN n LIMIT 500") == "MATCH (n) RETURN n LIMIT 11"
    assert sent("MATCH (n) RETURN n LIMIT $k", k=500) == "MATCH (n) RETURN n LIMIT 11"
    assert sent("MATCH (n) RETURN n LIMIT $k", k=2) == "MATCH (n) RETURN n LIMIT $k"
    assert sent("MATCH (n) RETURN n SKIP 5") == "MATCH (n) RETURN n SKIP 5 LIMIT 11"
    assert sent("MATCH (a) RETURN a.x AS x UNION MATCH (b) RETURN b.x AS x") == \
        "MATCH (a) RETURN a.x AS x LIMIT 11 UNION MATCH (b) RETURN b.x AS x LIMIT 11"
    inner = "MATCH (n) WHERE EXISTS { MATCH (n)-->(m) RETURN m } RETURN n"
    assert sent(inner) == inner + " LIMIT 11"  # only the top-level RETURN
    assert sent("MATCH (n) RETURN n.limit AS limit") == \
        "MATCH (n) RETURN n.limit AS limit LIMIT 11"
    with pytest.raises(QueryBudgetError):
        sent("MATCH (n) RETURN n LIMIT $missing")


def test_row_cap_after_aliases_named_like_clauses_and_on_every_union_branch():
    """Issue 30, item 4: an alias named ``as`` hid the final RETURN (no LIMIT), ``LIMIT`` after
    it was doubled (``LIMIT 2 LIMIT 11``, a syntax error), and UNION branches after it were not
    capped."""
    def sent(q: str) -> str:
        return prepare_untrusted_query(q, max_rows=10)

    q = "MATCH (a), (b) WITH a, b AS as RETURN a.name AS x, as.name AS y"
    assert sent(q) == q + " LIMIT 11"
    assert sent("RETURN 1 AS as LIMIT 2") == "RETURN 1 AS as LIMIT 2"
    assert sent("MATCH (n) RETURN n.name AS as LIMIT 500") == \
        "MATCH (n) RETURN n.name AS as LIMIT 11"
    assert sent("MATCH (n) RETURN n.name AS as ORDER BY as SKIP 1") == \
        "MATCH (n) RETURN n.name AS as ORDER BY as SKIP 1 LIMIT 11"
    assert sent("MATCH (a) RETURN a.x AS as UNION MATCH (b) RETURN b.x AS as") == \
        "MATCH (a) RETURN a.x AS as LIMIT 11 UNION MATCH (b) RETURN b.x AS as LIMIT 11"
    assert sent("MATCH (a) RETURN a.x AS as UNION ALL MATCH (b) RETURN b.x AS as LIMIT 50 "
                "UNION ALL MATCH (c) RETURN c.x AS as") == \
        ("MATCH (a) RETURN a.x AS as LIMIT 11 UNION ALL MATCH (b) RETURN b.x AS as LIMIT 11 "
         "UNION ALL MATCH (c) RETURN c.x AS as LIMIT 11")
    assert sent("MATCH (n) RETURN n.name AS union") == "MATCH (n) RETURN n.name AS union LIMIT 11"
    assert sent("MATCH (n) RETURN n.name AS return") == \
        "MATCH (n) RETURN n.name AS return LIMIT 11"


@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_generators_the_server_cannot_stop_are_refused_quickly(stores, protocol):
    store = stores[protocol]
    started = time.monotonic()
    for query in ("UNWIND range(1, 300000000) AS x RETURN count(x) AS c",
                  "RETURN reduce(s = 0, x IN range(1, 30000000) | s + x) AS s",
                  "RETURN size(reduce(s = [0], x IN range(1, 40) | s + s)) AS s",
                  "RETURN [x IN range(1, 5000) | [y IN range(1, 5000) | x]] AS grid"):
        with pytest.raises(QueryBudgetError):
            store.run_cypher(query)
    assert time.monotonic() - started < 5  # refused before sending, not timed out
    assert store.run_cypher("RETURN 1 AS one") == [{"one": 1}]


@pytest.fixture
def server_time_limit(stores):
    """TIMEOUT_MAX = 500 ms on the server (what bounds Bolt queries on FalkorDB), then reset."""
    redis_store = stores["redis"]
    before = redis_store.server_timeouts()
    assert redis_store.set_server_timeouts(max_ms=500)["TIMEOUT_MAX"] == 500
    yield 0.5
    redis_store.set_server_timeouts(max_ms=before["TIMEOUT_MAX"],
                                    default_ms=before["TIMEOUT_DEFAULT"])


SLOW = ("MATCH (a:Entity), (b:Entity), (c:Entity), (d:Entity), (e:Entity), (f:Entity), "
        "(g:Entity) RETURN count(*) AS c")  # 16^7 = 268M rows counted: minutes without a limit


@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_server_time_limit_stops_explosive_reads_on_both_protocols(stores, protocol,
                                                                   server_time_limit):
    """FalkorDB's Bolt endpoint ignores the transaction timeout; TIMEOUT_MAX bounds it (and a
    per-query timeout above TIMEOUT_MAX is clamped, not refused, on the Redis protocol)."""
    store = stores[protocol]
    store.client_grace_seconds = 20.0  # the server, not the client deadline, must stop it
    try:
        for _ in range(6):  # abandoned queries would pile up and stall the server
            started = time.monotonic()
            with pytest.raises(QueryTimeoutError):
                store.run_cypher(SLOW, timeout=30)
            assert time.monotonic() - started < 10
        started = time.monotonic()
        assert store.run_cypher("RETURN 1 AS one") == [{"one": 1}]
        assert time.monotonic() - started < 5
    finally:
        store.client_grace_seconds = 5.0


def test_budget_breaches_go_back_to_the_llm_as_error_lines(stores):
    from kgrag.methods.byokg.query import execute_query

    store = stores["redis"]
    refused = execute_query(store, "UNWIND range(1, 100000000) AS x RETURN x")
    assert not refused.ok and "range()" in refused.error
    assert "range()" in refused.verbalize()
    cut = execute_query(store, "MATCH (a:Entity), (b:Entity) RETURN a.name AS a, b.name AS b")
    assert cut.ok and cut.truncated and len(cut.rows) == 100
    assert "row budget" in cut.verbalize()
    ok = execute_query(store, "MATCH (n:Entity {name: 'Paprika'}) RETURN n.name AS start")
    assert ok.ok and ok.rows == [{"start": "Paprika"}] and not ok.truncated


@pytest.mark.parametrize("protocol", ["redis", "bolt"])
def test_nul_in_a_parameter_is_refused(stores, protocol):
    with pytest.raises(GraphDatabaseError, match="NUL"):
        stores[protocol].run_cypher("RETURN $v AS v", {"v": "ab\x00cd"})
    with pytest.raises(GraphDatabaseError, match="NUL"):
        stores[protocol].has_node("Paprika\x00 evil")


def test_bolt_error_cut_mid_character_is_typed_and_the_store_recovers(stores):
    bolt = stores["bolt"]
    with pytest.raises(UnsafeQueryError, match="non-ASCII"):
        bolt.run_cypher("СREATE (n:Pwned)")  # Cyrillic С: a homoglyph, refused by the check
    started = time.monotonic()
    with pytest.raises(GraphDatabaseError) as info:
        bolt._read("СREATE (n:Pwned)")  # trusted path: the server's syntax error quotes a С cut
    assert not isinstance(info.value, UnsafeQueryError)
    assert time.monotonic() - started < 10  # no hang in the rollback
    assert bolt.run_cypher("RETURN 2 AS two") == [{"two": 2}]


class _FakeBolt:
    """A neo4j driver stand-in whose server answers ``RETURN vecf32(...)`` or refuses it."""

    def __init__(self, knows_vecf32: bool) -> None:
        self.knows_vecf32 = knows_vecf32
        self.queries: list[str] = []

    def session(self, **_: Any) -> "_FakeBolt":
        return self

    def begin_transaction(self, **_: Any) -> "_FakeBolt":
        return self

    def __enter__(self) -> "_FakeBolt":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def run(self, query: str, *args: Any, **kwargs: Any) -> "_FakeBolt":
        import neo4j.exceptions as ex

        self.queries.append(query)
        if not self.knows_vecf32:
            raise ex.CypherSyntaxError("Unknown function 'vecf32'")
        return self

    def single(self) -> list:
        return [[1.0]]


@pytest.mark.parametrize("knows_vecf32, backend", [(True, "falkordb-bolt"), (False, "neo4j")])
def test_bolt_store_tells_falkordb_from_neo4j_once(knows_vecf32, backend):
    """The probe: FalkorDB answers ``vecf32``; Neo4j refuses an unknown function (a
    CypherSyntaxError), which means "not FalkorDB", not a failure."""
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    driver = _FakeBolt(knows_vecf32)
    store = Neo4jGraphStore(driver)
    assert store.cypher_backend() == backend
    assert store.cypher_backend() == backend
    assert driver.queries == ["RETURN vecf32([1.0]) AS probe"]  # probed once
    if backend == "falkordb-bolt":
        with pytest.raises(UnsafeQueryError, match="temporal"):
            store.run_cypher("RETURN date() AS d")
