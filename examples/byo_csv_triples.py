"""Bring your own data (1): a knowledge graph from a CSV file of triples.

Any delimited file with one ``head, relation, tail`` per line works (comma, tab or pipe; a
header row is detected; quoted fields may hold the separator). Extra columns? pass
``columns=["subject", "predicate", "object"]``. Run on your file::

    python examples/byo_csv_triples.py my_triples.csv "a question about it"

Without arguments it writes a small example CSV (a made-up company) to a temporary folder and
asks about it. It then retrieves with ByoKG-RAG's LLM-free mode (no LLM at all: question
n-grams linked to entities, triplets and paths scored against the question) through its
LangChain retriever, and prints the ranked answer candidates and the graph context. Loads the
packaged MiniLM (about 10 s). The same graph works with every other method and ``kgrag ask``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kgrag.embed import default_embedder
from kgrag.graph import read_triples
from langchain_kgrag import ByoKGRetriever, result_to_documents

SAMPLE_CSV = """head,relation,tail
Ada Lovelace,works_in,Research
Ada Lovelace,reports_to,Grace Hopper
Grace Hopper,leads,Research
Grace Hopper,based_in,Lisbon
Alan Turing,works_in,Platform
Alan Turing,reports_to,Edsger Dijkstra
Edsger Dijkstra,leads,Platform
Edsger Dijkstra,based_in,"Eindhoven, Netherlands"
Research,owns_project,Project Lighthouse
Platform,owns_project,Project Atlas
Project Lighthouse,uses_technology,Knowledge graphs
Project Atlas,uses_technology,Stream processing
"""
SAMPLE_QUESTION = "Where is the manager of Ada Lovelace based?"


def write_sample(folder: Path) -> Path:
    path = folder / "company.csv"
    path.write_text(SAMPLE_CSV, encoding="utf-8")
    return path


def main(argv: list[str] | None = None, embedder=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(argv[0]) if argv else write_sample(Path(tmp))
        question = argv[1] if len(argv) > 1 else SAMPLE_QUESTION
        kg = read_triples(path)  # sep / header are detected
    print(f"{path.name}: {kg.num_nodes} nodes, {kg.num_edges} edges, "
          f"{kg.num_relations} relations")

    retriever = ByoKGRetriever.from_graph(kg, embedder=embedder or default_embedder())
    # LLM-free (no llm given). retrieve_result returns the whole RetrievalResult (provenance
    # and the verbalised context); retriever.invoke(question) returns the Documents.
    result = retriever.retrieve_result(question)
    docs = result_to_documents(result, k=retriever.k)
    print(f"Question: {question}")
    print(f"Entities found in the question: {result.metadata['entities']}")
    print(f"Answer candidates: {result.metadata['answer_candidates'][:5]}")
    print("Graph context:")
    for line in result.metadata["context"].splitlines()[:8]:
        print(f"  {line}")
    return {"graph": kg, "docs": docs, "result": result}


if __name__ == "__main__":
    main()
