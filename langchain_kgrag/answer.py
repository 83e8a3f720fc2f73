"""A kgrag method's answer as a LangChain Runnable: ``invoke`` / ``ainvoke`` / ``batch`` /
``stream`` / ``astream``, composable in LCEL.

Input: the question (a string, or a dict with ``"question"``). Output: a dict with ``answer``
(the text), ``answers`` (the parsed answer list), ``sources`` (the retrieved ``Document`` s, as
the retriever returns them) and ``usage`` (the question's LLM calls and tokens), plus ``error``
when the retrieval records one (e.g. an unusable LLM reply under ``on_unusable_reply="empty"``,
docs/examples.md). The LLM calls run under the chain's run (child callbacks), so tracers see
retrieval and answer calls nested.

``stream`` yields ``{"delta": piece}`` chunks while the method's final answer call streams (the
intermediate calls of multi-step methods are not streamed), then one chunk with the four keys above;
chunks are ``AddableDict`` s, so adding them up gives the output plus ``delta`` (the whole reply's
text). The deltas carry the reply's text only: its markup tags (``<answers>``) and the blanks around
it are filtered out as they stream (:class:`kgrag.llm.streaming.TagStripper`). A method without an
answer LLM call (UltRAG's margin arbitrator) streams no deltas. """

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
)
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.utils import AddableDict
from pydantic import ConfigDict

from kgrag.context.types import Answer
from kgrag.errors import InvalidQuestionError
from kgrag.llm.base import llm_call_options
from kgrag.llm.streaming import TagStripper
from kgrag.methods.base import check_question
from langchain_kgrag.conversions import result_to_documents

if TYPE_CHECKING:  # pragma: no cover
    from langchain_kgrag.base import KGRetriever

_DONE = object()


def _question(value: Any) -> str:
    """The question of the chain's input (a string, or a dict with ``"question"``), checked by
    :func:`~kgrag.methods.base.check_question` (:class:`~kgrag.errors.InvalidQuestionError`)."""
    if isinstance(value, dict):
        if "question" not in value:
            raise InvalidQuestionError("the answer chain takes a question string or "
                                       "{'question': str}; the dict has no 'question'")
        value = value["question"]
    return check_question(value)


class KGAnswerChain(RunnableSerializable[Any, dict]):
    """Retrieve with ``retriever``'s method and answer with its answer prompt (needs an LLM).

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from kgrag.graph import KnowledgeGraph
    >>> from langchain_kgrag import UltRAGRetriever
    >>> kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon")])
    >>> # the chat model writes UltRAG's query, then the answer
    >>> chat = FakeListChatModel(responses=['"Paprika" -> directed_by', "Satoshi Kon"])
    >>> retriever = UltRAGRetriever.from_graph(kg, llm=chat, linking="exact",
    ...                                        executor="symbolic")
    >>> chain = retriever.answer_chain()
    >>> chain.invoke("Who directed Paprika?")["answer"]
    'Satoshi Kon'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    #: the KGRetriever whose method answers (typed by its LangChain base: KGRetriever builds
    #: this chain in ``answer_chain``, so importing it here would be an import cycle)
    retriever: BaseRetriever

    @property
    def _kg(self) -> KGRetriever:
        return cast("KGRetriever", self.retriever)

    def _output(self, answer: Answer) -> dict[str, Any]:
        out = AddableDict(answer=answer.text, answers=list(answer.answers),
                          sources=result_to_documents(answer.retrieval, k=self._kg.k),
                          usage=answer.usage.as_dict())
        if "error" in answer.retrieval.metadata:
            out["error"] = answer.retrieval.metadata["error"]
        return out

    # ------------------------------------------------------------------ invoke
    def _answer(self, question: str, run_manager: CallbackManagerForChainRun) -> dict[str, Any]:
        with llm_call_options(callbacks=run_manager.get_child()):
            return self._output(self._kg.method.answer(question))

    async def _aanswer(self, question: str,
                       run_manager: AsyncCallbackManagerForChainRun) -> dict[str, Any]:
        with llm_call_options(callbacks=run_manager.get_child()):
            return self._output(await self._kg.method.aanswer(question))

    def invoke(self, input: Any, config: RunnableConfig | None = None,
               **kwargs: Any) -> dict[str, Any]:
        return self._call_with_config(self._answer, _question(input), config,
                                      run_type="chain")

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None,
                      **kwargs: Any) -> dict[str, Any]:
        return await self._acall_with_config(self._aanswer, _question(input), config,
                                             run_type="chain")

    # ------------------------------------------------------------------ stream
    def _transform(self, inputs: Iterator[Any], run_manager: CallbackManagerForChainRun,
                   config: RunnableConfig) -> Iterator[dict[str, Any]]:
        question = _question(_gather(inputs))
        pieces: queue.Queue[Any] = queue.Queue()
        outcome: dict[str, Any] = {}
        text = TagStripper()

        def work() -> None:
            try:
                with llm_call_options(callbacks=run_manager.get_child(),
                                      on_token=lambda piece: pieces.put(text.feed(piece))):
                    outcome["answer"] = self._kg.method.answer(question)
                pieces.put(text.flush())
            except BaseException as exc:  # noqa: BLE001 -- re-raised in the caller below
                outcome["error"] = exc
            finally:
                pieces.put(_DONE)

        worker = threading.Thread(target=contextvars.copy_context().run, args=(work,),
                                  name="kgrag-answer-stream", daemon=True)
        worker.start()
        while (piece := pieces.get()) is not _DONE:
            if piece:
                yield AddableDict(delta=piece)
        worker.join()
        if "error" in outcome:
            raise outcome["error"]
        yield self._output(outcome["answer"])

    async def _atransform(self, inputs: AsyncIterator[Any],
                          run_manager: AsyncCallbackManagerForChainRun,
                          config: RunnableConfig) -> AsyncIterator[dict[str, Any]]:
        gathered: Any = None
        async for value in inputs:
            gathered = value if gathered is None else gathered + value
        question = _question(gathered)
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str] = asyncio.Queue()
        text = TagStripper()

        def put(piece: str) -> None:  # from the loop's thread or a worker thread alike
            loop.call_soon_threadsafe(pieces.put_nowait, text.feed(piece))

        async def work() -> Answer:
            with llm_call_options(callbacks=run_manager.get_child(), on_token=put):
                answer = await self._kg.method.aanswer(question)
            loop.call_soon_threadsafe(pieces.put_nowait, text.flush())
            return answer

        task = asyncio.ensure_future(work())
        while True:
            getter = asyncio.ensure_future(pieces.get())
            done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                if getter.result():
                    yield AddableDict(delta=getter.result())
                continue
            getter.cancel()
            break
        await asyncio.sleep(0)  # let call_soon_threadsafe callbacks scheduled last run
        while not pieces.empty():
            piece = pieces.get_nowait()
            if piece:
                yield AddableDict(delta=piece)
        yield self._output(task.result())

    def stream(self, input: Any, config: RunnableConfig | None = None,
               **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self._transform_stream_with_config(iter([input]), self._transform, config)

    async def astream(self, input: Any, config: RunnableConfig | None = None,
                      **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self._atransform_stream_with_config(one(), self._atransform, config):
            yield chunk

    def transform(self, input: Iterator[Any], config: RunnableConfig | None = None,
                  **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self._transform_stream_with_config(input, self._transform, config)

    async def atransform(self, input: AsyncIterator[Any], config: RunnableConfig | None = None,
                         **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._atransform_stream_with_config(input, self._atransform, config):
            yield chunk


def _gather(values: Iterator[Any]) -> Any:
    """The whole input of a transform: its chunks added up (strings concatenate)."""
    gathered = None
    for value in values:
        gathered = value if gathered is None else gathered + value
    return gathered
