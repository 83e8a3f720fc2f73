"""The backend registry (kgrag.graph.backends): what `kgrag load-db / index-db --backend` offer.

A backend registered as CONTRIBUTING's recipe says (a store module with ``connect(options)``
and one ``register_backend`` call) is offered and opened by the command line with no other
file touched.
"""

from __future__ import annotations

import pytest

from kgrag.errors import GraphDatabaseError
from kgrag.graph import backends
from kgrag.graph.backends import Backend, ConnectionOptions, backend_names, get_backend


def test_the_built_in_backends_name_their_store_classes():
    from kgrag.graph import FalkorDBGraphStore, Neo4jGraphStore

    assert backend_names()[:2] == ("falkordb", "neo4j")
    assert get_backend("falkordb").store_class() is FalkorDBGraphStore
    assert get_backend("neo4j").store_class() is Neo4jGraphStore
    with pytest.raises(GraphDatabaseError, match="known: falkordb, neo4j"):
        get_backend("sqlite")


def test_a_missing_required_option_is_named_before_connecting():
    neo4j = get_backend("neo4j")
    assert neo4j.missing(ConnectionOptions(uri="neo4j://x:7687")) is None
    with pytest.raises(GraphDatabaseError, match=r"--backend neo4j needs --uri \(e\.g\. neo4j://"):
        neo4j.open(ConnectionOptions())


class ToyStore:
    """What load-db needs from a store: load_triples, counts, close."""

    opened: list[ConnectionOptions] = []

    def __init__(self, options: ConnectionOptions) -> None:
        self.options = options
        self.triples: list[tuple[str, str, str]] = []
        self.closed = False

    def load_triples(self, source, *, batch_size, progress, **read_options):
        with open(source, encoding="utf-8") as fh:
            self.triples = [tuple(line.rstrip("\n").split("|")) for line in fh if line.strip()]
        return f"{len(self.triples)} toy triples"

    def counts(self):
        return {"edges": len(self.triples)}

    def close(self):
        self.closed = True


def connect_toy(options: ConnectionOptions) -> ToyStore:
    store = ToyStore(options)
    ToyStore.opened.append(store)
    return store


def test_a_registered_backend_is_offered_and_opened_by_load_db(tmp_path, monkeypatch, capsys):
    from kgrag.cli import main

    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))
    backends.register_backend(Backend("toy", f"{__name__}:ToyStore", f"{__name__}:connect_toy",
                                      requires=("database",)))
    file = tmp_path / "kb.txt"
    file.write_text("Paprika|directed_by|Satoshi Kon\nPaprika|has_genre|Anime\n", encoding="utf-8")
    monkeypatch.setattr(ToyStore, "opened", [])
    assert main(["load-db", str(file), "--backend", "toy", "--database", "films", "--graph", "g1",
                 "--label", "Entity", "--no-progress"]) == 0
    (store,) = ToyStore.opened
    assert store.closed and store.options.database == "films" and store.options.graph == "g1"
    assert store.options.mapping["node_label"] == "Entity"
    assert store.triples == [("Paprika", "directed_by", "Satoshi Kon"),
                             ("Paprika", "has_genre", "Anime")]
    assert "2 toy triples" in capsys.readouterr().out
    assert main(["load-db", str(file), "--backend", "toy", "--no-progress"]) != 0
    assert "--backend toy needs --database" in capsys.readouterr().err
