"""Neo4j: run kgrag over a graph that already lives in Neo4j, connected through LangChain.

``langchain_neo4j.Neo4jGraph`` holds the connection (as in any LangChain Neo4j app);
``Neo4jGraphStore.from_langchain`` reuses its driver, so kgrag's methods run their graph
operations as Cypher on the server -- nothing is copied into memory. Here:

* UltRAG executes a logical query with relation projections pushed down to the database;
* the ``KGToolkit`` gives an agent graph tools, including read-only Cypher (write clauses are
  refused).

Point it at your database with environment variables (or the matching options)::

    NEO4J_URI=bolt://localhost:7687 NEO4J_USERNAME=neo4j NEO4J_PASSWORD=... \\
        python examples/neo4j_existing_graph.py --load-demo-data

Entities are nodes with label ``--node-label`` (default ``Entity``) and a ``--name-property``
(default ``name``); relation names are relationship types. A graph that LangChain's
``add_graph_documents`` or LlamaIndex's ``PropertyGraphIndex`` wrote needs no mapping:
``Neo4jGraphStore.from_langchain(graph, data_model="auto")`` (docs/graph-databases.md).
``--load-demo-data`` first MERGEs the bundled movie graph under that label (skip it for your own
graph, and change the question and query). The UltRAG query writer is a scripted stand-in: replace
it with your own chat model.

Any Bolt server works; kgrag's test suite runs this script against FalkorDB's Bolt port, with the
data loaded beforehand through ``FalkorDBGraphStore`` (FalkorDB's Bolt splices parameters into
the query text, so names with quotes such as "Palme d'Or" cannot be written over Bolt).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from langchain_neo4j import Neo4jGraph

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag.context.metadata import unflatten
from kgrag.graph.cypher.neo4j import Neo4jGraphStore
from langchain_kgrag import KGToolkit, UltRAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Who directed the Japanese animated films?"
QUERY = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", default=env("NEO4J_URI", "bolt://localhost:7687"))
    parser.add_argument("--username", default=env("NEO4J_USERNAME", "neo4j"))
    parser.add_argument("--password", default=env("NEO4J_PASSWORD", ""))
    parser.add_argument("--database", default=env("NEO4J_DATABASE") or None)
    parser.add_argument("--node-label", default=env("KGRAG_NODE_LABEL", "Entity"))
    parser.add_argument("--name-property", default=env("KGRAG_NAME_PROPERTY", "name"))
    parser.add_argument("--load-demo-data", action="store_true",
                        help="MERGE examples/data/movies.tsv into the database first")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    graph = Neo4jGraph(url=args.uri, username=args.username, password=args.password,
                       database=args.database, refresh_schema=False)
    store = Neo4jGraphStore.from_langchain(graph, node_label=args.node_label,
                                           name_property=args.name_property)
    if args.load_demo_data:
        summary = store.load_triples(str(DATA), progress=False)
        print(f"loaded the demo graph: {summary}")
    count = graph.query(f"MATCH (n:`{args.node_label}`) RETURN count(n) AS nodes")[0]["nodes"]
    print(f"{args.uri}: {count} nodes labelled {args.node_label}; "
          f"{len(store.list_relations())} relation types")
    if count == 0:
        print("nothing to query: pass --load-demo-data, or --node-label for your graph")
        return {"nodes": 0}

    # UltRAG on the database, symbolic executor: projections run as Cypher one-hop queries on
    # the server. (executor="neural", the default, fetches the SEPPR subgraph around the
    # query's entities and runs UltraQuery on it.)
    retriever = UltRAGRetriever.from_graph(
        store, llm=scripted_chat(f"<query>{QUERY}</query>"),  # replace with your chat model
        linking="exact", executor="symbolic")
    docs = retriever.invoke(QUESTION)
    print(f"Question: {QUESTION}")
    print(f"UltRAG query: {unflatten(docs[0].metadata)['retrieval'].get('query')}")
    for doc in docs:
        print(f"  {doc.page_content}")

    # The same store as agent tools (see langchain_agent.py for the agent loop).
    tools = {tool.name: tool for tool in KGToolkit.from_graph(store).get_tools()}
    path_text = tools["kg_follow_path"].invoke(
        {"entity": "Tokyo Godfathers", "path": "directed_by -> born_in"})
    cypher_text = tools["kg_cypher"].invoke({"query": (
        f"MATCH (f:`{args.node_label}`)-[:directed_by]->(p {{{args.name_property}: "
        f"'Satoshi Kon'}}) RETURN f.{args.name_property} AS film ORDER BY film")})
    refused = tools["kg_cypher"].invoke({"query": f"MATCH (n:`{args.node_label}`) DETACH DELETE n"})
    print(f"kg_follow_path: {path_text}")
    print(f"kg_cypher (read): {cypher_text}")
    print(f"kg_cypher (write attempt): {refused}")
    return {"nodes": count, "entities": [d.page_content for d in docs], "path": path_text,
            "cypher": cypher_text, "refused": refused}


if __name__ == "__main__":
    main()
