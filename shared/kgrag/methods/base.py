"""What every method offers, whatever framework wraps it.

A method is a plain Python object with ``retrieve(question) -> RetrievalResult`` and, when it has
an LLM, ``answer(question) -> Answer``. The adapters in ``langchain_kgrag`` and
``llama_index_kgrag`` only convert these results; they never re-implement retrieval.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import ClassVar

from kgrag.context.types import Answer, RetrievalResult
from kgrag.errors import LLMNotConfiguredError


class KGMethod(ABC):
    """Base class of the five methods' core pipelines."""

    #: Short identifier used in metadata, CLI and evaluation ("byokg", "simgrag", ...).
    name: ClassVar[str] = "method"

    @abstractmethod
    def retrieve(self, question: str) -> RetrievalResult:
        """Retrieve graph context for ``question`` (ranked items, provenance, LLM usage)."""

    async def aretrieve(self, question: str) -> RetrievalResult:
        """Async retrieval; by default runs :meth:`retrieve` in a worker thread."""
        return await asyncio.to_thread(self.retrieve, question)

    def answer(self, question: str) -> Answer:
        """Retrieve, then answer with the method's answer prompt. Needs an LLM."""
        raise LLMNotConfiguredError(
            f"{type(self).__name__} cannot answer without an LLM; pass llm= when building it"
        )

    async def aanswer(self, question: str) -> Answer:
        return await asyncio.to_thread(self.answer, question)

    def answer_from(self, question: str, result: RetrievalResult) -> Answer:
        """Answer from a retrieval already made (e.g. one a framework post-processed): the
        method's answer step only. ``result.usage`` is included in the answer's usage."""
        raise LLMNotConfiguredError(
            f"{type(self).__name__} cannot answer without an LLM; pass llm= when building it"
        )

    async def aanswer_from(self, question: str, result: RetrievalResult) -> Answer:
        return await asyncio.to_thread(self.answer_from, question, result)
