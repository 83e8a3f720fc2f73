"""Bring your own data (2): question answering over a folder of text documents with KET-RAG.

KET-RAG indexes text two ways: a knowledge-graph skeleton extracted by an LLM from the most
central chunks (a share ``budget`` = beta of them), and a cheap keyword-chunk bipartite graph over
all of it. With ``budget=0`` the index is the keyword graph alone and needs no LLM at all.
Run on your own folder of ``.txt`` / ``.md`` files::

    python examples/byo_documents_ketrag.py my_docs/ "a question about them"

Without arguments it writes three short example documents to a temporary folder. It indexes
them LLM-free (beta = 0), saves and reloads the index, prints the retrieved context, and answers
with a scripted stand-in chat model (``scripted_llms.py``) -- replace it with your own, and pass
``budget=0.8`` (the paper's setting) to also build the skeleton with that model. Loads the
packaged MiniLM (about 10 s). The command line does the same: ``kgrag ketrag index DIR`` then
``kgrag ketrag ask DIR.ketrag "question"``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from langchain_core.documents import Document

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_chat

from kgrag.embed import default_embedder
from langchain_kgrag import KETRAGRetriever

SAMPLE_DOCS = {
    "harbour.txt": "The Lantern Harbour museum opened in 1921. Its founder, the shipwright "
                   "Marta Ilves, donated her collection of ship models to the town of Saltby.",
    "people/ilves.md": "Marta Ilves was born in Tallinn in 1880 and moved to Saltby as a young "
                       "woman. She trained apprentices in the old boatyard for forty years.",
    "town.txt": "Saltby is a fishing town on the northern coast. Its lighthouse was rebuilt in "
                "1950 after a storm destroyed the first tower.",
}
SAMPLE_QUESTION = "Where was the founder of the Lantern Harbour museum born?"


def read_folder(folder: Path) -> list[Document]:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".txt", ".md"))
    if not files:
        raise SystemExit(f"no .txt or .md files under {folder}")
    return [Document(page_content=p.read_text(encoding="utf-8"),
                     metadata={"source": str(p.relative_to(folder))}) for p in files]


def write_samples(folder: Path) -> Path:
    for name, text in SAMPLE_DOCS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def main(argv: list[str] | None = None, embedder=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    embedder = embedder or default_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(argv[0]) if argv else write_samples(Path(tmp) / "docs")
        question = argv[1] if len(argv) > 1 else SAMPLE_QUESTION
        docs = read_folder(folder)

        # LLM-free index (beta = 0); small chunks because the sample documents are short
        retriever = KETRAGRetriever.from_documents(docs, embedder=embedder, budget=0,
                                                   chunk_size=100, splits=1, progress=False)
        print(f"indexed {len(docs)} documents: {retriever.method.index.summary()}")
        retriever.method.save(Path(tmp) / "index")  # JSON + .npy files, no pickle
        retriever = KETRAGRetriever.load(
            Path(tmp) / "index", embedder=embedder,
            llm=scripted_chat("Answer: Tallinn"))  # replace with your own chat model

        context_docs = retriever.invoke(question)
        print(f"Question: {question}")
        for doc in context_docs:
            source = doc.metadata.get("source", "")  # the source document's own metadata
            print(f"  [{doc.metadata['channel']} {doc.metadata['score']:.2f} {source}] "
                  f"{doc.page_content[:80]}")
        answer = retriever.answer(question)
        print(f"Answer: {answer.text}   (LLM calls: {answer.usage.calls})")
    return {"docs": context_docs, "answer": answer}


if __name__ == "__main__":
    main()
