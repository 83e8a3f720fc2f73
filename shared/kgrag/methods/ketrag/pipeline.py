"""``KETRAG``: the KET-RAG method object (index + two-channel retrieval + answer prompt)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.context.types import Answer, RetrievalResult, RetrievedItem, Usage
from kgrag.errors import EmbeddingError
from kgrag.graph.base import GraphStore
from kgrag.llm.base import optional_llm
from kgrag.llm.prompts import PromptSet
from kgrag.llm.steps import Steps, answer_steps, in_thread
from kgrag.methods.base import KGMethod, check_unusable_reply
from kgrag.methods.ketrag.builder import build_index
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.ketrag.index import KETIndex
from kgrag.methods.ketrag.prompts import PROMPTS, answer_prompt
from kgrag.methods.ketrag.retrieval import retrieve_context
from kgrag.text.tokens import TextTokenizer, get_tokenizer

log = logging.getLogger(__name__)

INSUFFICIENT = "insufficient information"


def parse_answer(reply: str) -> tuple[str, list[str]]:
    """``(text, answers)`` from an answer reply; "Insufficient information" gives no answers."""
    text = (reply or "").strip()
    match = re.search(r"(?im)^\s*answer\s*:\s*(.+)$", text)
    if match:
        text = match.group(1).strip()
    else:
        text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    text = text.strip().strip('"').strip()
    if not text or text.lower().rstrip(".") == INSUFFICIENT:
        return text or "Insufficient information.", []
    return text, [text]


class KETRAG(KGMethod):
    """KET-RAG over a :class:`KETIndex`.

    Build with :meth:`from_documents` (indexes the documents; needs an LLM when ``budget`` > 0)
    or :meth:`load` (a saved index directory). Retrieval parameters (``context_tokens``,
    ``graph_share``, ``entity_top_k``, ...) can be changed per instance without re-indexing.

    ``on_unusable_reply`` (``"raise"``): LLM replies are read while indexing (skeleton
    extraction) and answering. A key chunk whose extraction replies stay unusable after the
    re-ask, or a blank answer, raises :class:`~kgrag.errors.LLMOutputError`; with ``"empty"``
    the chunk is indexed without skeleton records (logged; every retrieval then says so in
    ``metadata["error"]`` and ``metadata["failed_chunks"]``, its text channel unchanged) and a
    blank answer is an answer with no answers (docs/examples.md, "Unusable LLM replies").

    >>> # method = KETRAG.from_documents(texts, budget=0)     # LLM-free keyword-only index
    >>> # method.retrieve("Which country was A born in?").context
    """

    name = "ketrag"
    config_class = KETRAGConfig
    llm_needed = {"answer": ("KET-RAG answer generation", "Without an LLM, retrieve() still "
                             "works (it makes no LLM call); only answering needs one.")}
    #: retrieval never calls the LLM (the index's extraction did, when it was built): its
    #: LLM-free retrieval is :meth:`retrieve` itself
    has_llm_free_mode = True

    def __init__(self, index: KETIndex, *, llm: Any = None, embedder: Any = None,
                 tokenizer: TextTokenizer | str | None = None, prompts: Any = None,
                 on_unusable_reply: str = "raise", **retrieval_params: Any) -> None:
        from kgrag.embed import as_embedder, embedder_name

        unknown = set(retrieval_params) - set(KETRAGConfig.RETRIEVAL_PARAMS)
        if unknown:
            raise TypeError(f"not a retrieval parameter: {', '.join(sorted(unknown))} "
                            f"(allowed: {', '.join(KETRAGConfig.RETRIEVAL_PARAMS)})")
        self.index = index
        #: the index's knobs, with ``retrieval_params`` and ``on_unusable_reply`` replaced
        self.configure(index.config, {**retrieval_params, "on_unusable_reply": on_unusable_reply})
        self.llm = optional_llm(llm)
        self.prompts = prompts if isinstance(prompts, PromptSet) else PromptSet(
            PROMPTS, prompts, method="KET-RAG")
        self.embedder = as_embedder(embedder)
        self.tokenizer = get_tokenizer(tokenizer)
        if self.tokenizer.name != index.tokenizer_name:
            log.warning("KET-RAG: index counted tokens with %r, queries use %r",
                        index.tokenizer_name, self.tokenizer.name)
        name = embedder_name(self.embedder)
        if index.embedder_name and name != index.embedder_name:
            log.warning("KET-RAG: index embedded with %r, queries use %r", index.embedder_name,
                        name)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_graph(cls, graph: GraphStore, *, llm: Any = None, embedder: Any = None,
                   **params: Any) -> KETRAG:
        """KET-RAG indexes text, not a graph: use :meth:`from_documents` (or :meth:`load`)."""
        raise TypeError("KET-RAG is built from documents: KETRAG.from_documents(docs, llm=..., "
                        "embedder=...), or KETRAG.load(directory) for a saved index")

    @classmethod
    def from_documents(cls, documents: Iterable[Any], *, llm: Any = None, embedder: Any = None,
                       cache_dir: str | Path | None = None, progress: bool = True,
                       tokenizer: TextTokenizer | str | None = None,
                       config: KETRAGConfig | None = None, prompts: Any = None,
                       on_unusable_reply: str = "raise", **params: Any) -> KETRAG:
        """Index ``documents`` and return the method (``params``: any :class:`KETRAGConfig`
        field; ``prompts``: replace any of :data:`~kgrag.methods.ketrag.prompts.PROMPTS`;
        ``on_unusable_reply``: see the class)."""
        from kgrag.embed import as_embedder

        check_unusable_reply(on_unusable_reply)  # before any model loads or LLM call
        emb = as_embedder(embedder)
        prompt_set = PromptSet(PROMPTS, prompts, method="KET-RAG")
        index = build_index(documents, llm=llm, embedder=emb, config=config, cache_dir=cache_dir,
                            tokenizer=tokenizer, progress=progress, prompts=prompt_set,
                            on_unusable_reply=on_unusable_reply, **params)
        return cls(index, llm=llm, embedder=emb, tokenizer=tokenizer, prompts=prompt_set,
                   on_unusable_reply=on_unusable_reply)

    @classmethod
    def load(cls, directory: str | Path, *, llm: Any = None, embedder: Any = None,
             tokenizer: TextTokenizer | str | None = None, prompts: Any = None,
             **retrieval_params: Any) -> KETRAG:
        """Load an index saved with :meth:`save` (no pickle); ``prompts`` as in ``__init__``."""
        return cls(KETIndex.load(directory), llm=llm, embedder=embedder, tokenizer=tokenizer,
                   prompts=prompts, **retrieval_params)

    def save(self, directory: str | Path) -> Path:
        return self.index.save(directory)

    # ------------------------------------------------------------------ retrieval
    def _query_vector(self, question: str) -> np.ndarray:
        q = np.asarray(self.embedder.embed_query(question), dtype=np.float32).ravel()
        if q.shape[0] != self.index.sub_vectors.shape[1]:
            raise EmbeddingError(
                f"the query embedder gives {q.shape[0]} dimensions, the index has "
                f"{self.index.sub_vectors.shape[1]}; use the embedder the index was built with "
                f"({self.index.embedder_name})")
        norm = float(np.linalg.norm(q))
        return q / norm if norm else q

    def retrieval_steps(self, question: str, **options: Any) -> Steps[RetrievalResult]:
        """The two-channel retrieval: no LLM call (in a worker thread under the async
        driver)."""
        return (yield in_thread(lambda: self.retrieve_llm_free(question)))

    def retrieve_llm_free(self, question: str) -> RetrievalResult:
        """The retrieval itself, which makes no LLM call."""
        sections, stats = retrieve_context(self.index, self._query_vector(question), self.config,
                                           self.tokenizer)
        items: list[RetrievedItem] = [item for section in sections for item in section.items]
        context = "\n\n".join(s.render() for s in sections)
        metadata = {"context": context, **stats, "budget": self.index.config.budget,
                    "graph_share": self.config.graph_share,
                    "context_limit": self.config.context_tokens}
        failed = int(self.index.cost.get("failed_chunks", 0) or 0)
        if failed:  # built with on_unusable_reply="empty": the skeleton misses those chunks
            metadata["failed_chunks"] = failed
            metadata["error"] = (
                f"{failed} of {self.index.cost.get('key_chunks', '?')} key chunk(s) were "
                "indexed without skeleton records: their extraction replies were unusable; "
                f"first: {self.index.cost.get('failed_chunk_error') or 'not recorded'}")
        return RetrievalResult(question=question, items=items, method=self.name,
                               usage=Usage(), metadata=metadata)

    # ------------------------------------------------------------------ answering
    def _answer_prompt(self, question: str, retrieval: RetrievalResult) -> str:
        return answer_prompt(question, retrieval.metadata["context"],
                             template=self.prompts.template("answer"))

    def answering_steps(self, question: str, result: RetrievalResult) -> Steps[Answer]:
        """One answer call over the retrieved context (re-asked once if blank)."""
        reply = yield from answer_steps(self._answer_prompt(question, result),
                                        system=self.prompts.template("answer_system"))
        text, answers = parse_answer(reply)
        result.metadata["answer_reply"] = reply
        return Answer(question, answers, text, result)

    def finish_answer(self, answer: Answer) -> Answer:
        """The retrieval makes no LLM call: it reports the answer's usage as its own."""
        answer.retrieval.usage = Usage().add(answer.usage)
        return answer
