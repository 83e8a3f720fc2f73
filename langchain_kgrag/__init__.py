"""LangChain integration of kgrag: one ``BaseRetriever`` (with search tool and answer chain)
per method, plus ByoKG-RAG's graph toolkit.

Needs LangChain (``pip install 'kgrag[langchain]'``).
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "langchain_kgrag needs LangChain's core package, which is not installed. "
        "Install the extra: pip install 'kgrag[langchain]'") from exc

from langchain_kgrag.answer import KGAnswerChain
from langchain_kgrag.base import KGRetriever, retriever_for
from langchain_kgrag.byokg import ByoKGRetriever, KGToolkit
from langchain_kgrag.conversions import result_to_documents
from langchain_kgrag.graphraft import GraphRAFTRetriever
from langchain_kgrag.ketrag import KETRAGRetriever
from langchain_kgrag.simgrag import SimGRAGRetriever
from langchain_kgrag.ultrag import UltRAGRetriever

__all__ = [
    "ByoKGRetriever",
    "GraphRAFTRetriever",
    "KETRAGRetriever",
    "KGAnswerChain",
    "KGRetriever",
    "KGToolkit",
    "SimGRAGRetriever",
    "UltRAGRetriever",
    "result_to_documents",
    "retriever_for",
]
