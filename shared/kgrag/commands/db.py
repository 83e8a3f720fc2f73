"""``kgrag load-db`` and ``kgrag index-db``: push a triples file (or a saved graph) into Neo4j or
FalkorDB, and write its node vectors and vector index.

    kgrag load-db kb.txt --backend falkordb --host localhost --port 6379 --graph movies
    NEO4J_PASSWORD=... kgrag load-db kb.txt --backend neo4j --uri neo4j://db:7687 --username neo4j
    kgrag load-db kb.txt --backend falkordb --embed       # + node vectors and their vector index
    kgrag index-db --backend falkordb --graph movies       # the same for a graph already loaded

Loading is batched (``UNWIND``) and idempotent (``MERGE``): running it twice adds nothing.
The Neo4j password is read from the environment variable named by ``--password-env``
(default ``NEO4J_PASSWORD``), never from the command line, where other users could see it.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from kgrag.errors import KgragError
from kgrag.graph.backends import ConnectionOptions, backend_names, get_backend


def _connection(args: argparse.Namespace) -> ConnectionOptions:
    mapping = {"node_label": args.label, "name_property": args.name_property,
               "relation_property": args.relation_property,
               "relationship_type": args.relationship_type}
    return ConnectionOptions(uri=args.uri, host=args.host, port=args.port, graph=args.graph_key,
                             username=args.username,
                             password=os.environ.get(args.password_env) or None,
                             database=args.database, mapping=mapping)


def _check_backend(args: argparse.Namespace) -> None:
    """Fail on a missing connection option before any file is read."""
    problem = get_backend(args.backend).missing(_connection(args))
    if problem:
        raise KgragError(problem)


def _open_store(args: argparse.Namespace) -> Any:
    return get_backend(args.backend).open(_connection(args))


def _cmd_load_db(args: argparse.Namespace) -> int:
    from kgrag.graph.storage import load_graph

    if args.batch_size < 1:
        raise KgragError("--batch-size must be at least 1")
    _check_backend(args)
    if not os.path.exists(args.graph):
        raise FileNotFoundError(f"no graph at {args.graph}")
    source: Any = load_graph(args.graph) if os.path.isdir(args.graph) else args.graph
    read_options = {}
    if args.sep and not os.path.isdir(args.graph):
        read_options["sep"] = {"\\t": "\t", "tab": "\t"}.get(args.sep, args.sep)
    store = _open_store(args)
    try:
        summary = store.load_triples(source, batch_size=args.batch_size,
                                     progress=not args.no_progress, **read_options)
        print(summary)
        if hasattr(store, "stored_counts"):  # a database: its own counts, no scan
            nodes, edges = store.stored_counts()
            print(f"graph now: {nodes} {store.node_label} nodes, {edges} relationships in the "
                  "database")
        else:
            print(f"graph now: {store.counts()}")
        if args.embed:
            _embed(store, args)
    finally:
        store.close()
    return 0


def _embed(store: Any, args: argparse.Namespace) -> None:
    """Write node vectors + the vector index (``--embed`` / ``index-db``), resumably."""
    from kgrag.commands.common import load_factory
    from kgrag.embed import as_embedder
    from kgrag.graph.cypher.vectors import HnswOptions, embed_store

    if args.embed_batch_size < 1:
        raise KgragError("--embed-batch-size must be at least 1")
    try:
        hnsw = HnswOptions(m=args.hnsw_m, ef_construction=args.ef_construction)
    except ValueError as exc:
        raise KgragError(f"--hnsw-m / --ef-construction: {exc}") from None
    embedder = as_embedder(load_factory(args.embedder, "--embedder"))
    print(embed_store(store, embedder, model=args.model, prop=args.property,
                      batch_size=args.embed_batch_size, progress=not args.no_progress,
                      hnsw=hnsw))


def _cmd_index_db(args: argparse.Namespace) -> int:
    _check_backend(args)
    store = _open_store(args)
    try:
        _embed(store, args)
    finally:
        store.close()
    return 0


def _add_embed_arguments(p: Any) -> None:
    p.add_argument("--embedder", metavar="MODULE:FACTORY", default=None,
                   help="embedder of the node names (default: the packaged all-MiniLM-L6-v2); "
                        "the methods must use the same one")
    p.add_argument("--model", default=None,
                   help="model name recorded with the vectors (default: the embedder's cache "
                        "key; needed for embedders without one)")
    p.add_argument("--property", default="embedding",
                   help="node property holding the vectors (default embedding)")
    p.add_argument("--embed-batch-size", type=int, default=256,
                   help="names per embedding call and write (default 256)")
    p.add_argument("--hnsw-m", type=int, default=None,
                   help="links per node of the vector index, when it is created here (default: "
                        "the database's, 16)")
    p.add_argument("--ef-construction", type=int, default=None,
                   help="HNSW candidate list while inserting, when the index is created here "
                        "(default: the database's; FalkorDB 200). Lower builds a large graph's "
                        "index faster, e.g. 50 about 2x; see docs/graph-databases.md")


def _add_connection_arguments(p: Any) -> None:
    p.add_argument("--backend", choices=backend_names(), required=True,
                   help="the database (required)")
    p.add_argument("--uri", help="Neo4j: bolt:// or neo4j:// URI (required with --backend neo4j)")
    p.add_argument("--username", default=os.environ.get("NEO4J_USERNAME"),
                   help="Neo4j user (default: $NEO4J_USERNAME; none = no authentication)")
    p.add_argument("--password-env", default="NEO4J_PASSWORD",
                   help="environment variable holding the password (default NEO4J_PASSWORD)")
    p.add_argument("--database", default=None, help="Neo4j database (default: server default)")
    p.add_argument("--host", default="localhost", help="FalkorDB host (default localhost)")
    p.add_argument("--port", type=int, default=6379, help="FalkorDB port (default 6379)")
    p.add_argument("--graph", dest="graph_key", default="kgrag",
                   help="FalkorDB graph key (default kgrag)")
    p.add_argument("--label", default="Entity", help="node label (default Entity)")
    p.add_argument("--name-property", default="name", help="node name property (default name)")
    p.add_argument("--relation-property", default=None,
                   help="store relations in this relationship property instead of as types")
    p.add_argument("--relationship-type", default="RELATED",
                   help="relationship type used with --relation-property (default RELATED)")


def register(subparsers: Any) -> None:
    """Add ``load-db`` and ``index-db`` to the ``kgrag`` command line (see
    :mod:`kgrag.commands`)."""
    p = subparsers.add_parser(
        "load-db", help="load a triples file into Neo4j or FalkorDB",
        description="""
            Push a triples file (or a saved graph directory) into Neo4j or FalkorDB. Loading
            is batched (UNWIND) and idempotent (MERGE): running it twice adds nothing.

            The Neo4j password is read from the environment variable named by
            --password-env (default NEO4J_PASSWORD), never from the command line, where
            other users could see it.""",
        epilog="""
            examples:
              kgrag load-db kb.txt --backend falkordb --host localhost --port 6379 --graph movies
              NEO4J_PASSWORD=... kgrag load-db kb.txt --backend neo4j --uri neo4j://db:7687 \
--username neo4j""")
    p.add_argument("graph", metavar="GRAPH", help="triples file or saved graph directory")
    _add_connection_arguments(p)
    p.add_argument("--sep", default=None,
                   help="field separator of a triples file (default: detected; 'tab' or "
                        "'\\t' for a tab)")
    p.add_argument("--batch-size", type=int, default=5000,
                   help="triples (and nodes) per batched UNWIND write (default 5000)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--embed", action="store_true",
                   help="also write each node's name vector and the database's vector index "
                        "(resumable; see kgrag index-db)")
    _add_embed_arguments(p)
    p.set_defaults(func=_cmd_load_db)

    q = subparsers.add_parser(
        "index-db", help="write node vectors + a vector index into a graph database",
        description="""
            Embed every entity node's name into a node property (default embedding) of a graph
            already in Neo4j or FalkorDB, and create the database's vector index on it, so no
            method embeds the graph's names in the client. Batched, with progress, and
            resumable: nodes that already hold a vector are skipped. The model is recorded in
            the database (a KgragVectors node); another model is refused, never mixed. Vectors
            a framework already wrote in the property are adopted when they are this model's
            embeddings of the names.""",
        epilog="""
            examples:
              kgrag index-db --backend falkordb --host localhost --port 6379 --graph movies
              NEO4J_PASSWORD=... kgrag index-db --backend neo4j --uri neo4j://db:7687 --username \
neo4j""")
    _add_connection_arguments(q)
    _add_embed_arguments(q)
    q.add_argument("--no-progress", action="store_true", help="no progress bar")
    q.set_defaults(func=_cmd_index_db)
