"""The LLM port: a tiny completion protocol, adapters for LangChain / LlamaIndex, usage accounting.

Methods call ``llm.complete(prompt) -> str`` (or ``await llm.acomplete(prompt)``). Users pass any
LangChain ``BaseChatModel`` / ``BaseLanguageModel`` or LlamaIndex ``LLM``; :func:`as_llm` wraps it.
Prompts and replies pass through :func:`~kgrag.text.clean.replace_lone_surrogates` (a lone surrogate
in a question would make a client's UTF-8 encoder fail). Every adapter counts calls and, where the
model reports them, prompt and completion tokens, into a :class:`~kgrag.context.types.Usage` so a
method can report the cost of each question.

The core never imports LangChain or LlamaIndex at module level: detection is duck-typed on the
class hierarchy's module names, and imports happen inside the adapter that needs them.

Per-call framework options travel in a context variable, not through every method's signature:
inside ``with llm_call_options(callbacks=...)`` every LangChain call an adapter makes gets
``config={"callbacks": ...}`` (so a LangChain retriever's child run manager nests the LLM runs
under the retriever run). Context variables follow ``asyncio`` tasks and ``asyncio.to_thread``,
so concurrent questions never see each other's options. Usage scopes (:meth:`UsageTracker.track`)
are per context for the same reason: 50 concurrent questions get 50 separate counts.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from contextlib import ExitStack, contextmanager
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Protocol, runtime_checkable

from kgrag.context.types import Usage
from kgrag.errors import LLMCallError, LLMNotConfiguredError
from kgrag.text.clean import replace_lone_surrogates as _clean

#: the message of a missing LLM; callers append what the method can do without one (its
#: LLM-free mode, ``execute()``, ``retrieve_pattern()``, ``budget=0`` ...), which differs
NO_LLM_HELP = (
    "{what} needs an LLM and none was configured. Pass llm= with any LangChain chat model "
    "(e.g. ChatOpenAI, ChatBedrock, ChatOllama) or LlamaIndex LLM."
)


@runtime_checkable
class LLM(Protocol):
    """What kgrag needs from a language model."""

    usage: Usage

    def complete(self, prompt: str, *, system: str | None = None) -> str: ...

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str: ...


#: the framework options of the LLM calls made in this context (see :func:`llm_call_options`)
_CALL_OPTIONS: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "kgrag_llm_call_options", default=MappingProxyType({}))  # read-only: set() replaces it

#: the usage scopes open in this context, as ``(tracker id, Usage)`` pairs
_USAGE_SCOPES: contextvars.ContextVar[tuple[tuple[int, Usage], ...]] = contextvars.ContextVar(
    "kgrag_usage_scopes", default=())


@contextmanager
def llm_call_options(**options: Any) -> Iterator[dict[str, Any]]:
    """Framework options for every LLM call made inside the block (in this context only).

    Recognised keys: ``on_token`` (a function receiving the streamed pieces of the calls of the
    steps in ``stream_steps``, default the final ``"answer"`` call), ``callbacks`` (a LangChain
    callback manager or handler list, e.g. a retriever's ``run_manager.get_child()``), ``tags``,
    ``metadata`` and ``run_name`` (passed in the LangChain ``config``), and ``config`` (a whole
    LangChain ``RunnableConfig``, merged under the other keys). Options of an enclosing block are
    kept unless overridden. ``None`` values are ignored. """
    merged = {**_CALL_OPTIONS.get(), **{k: v for k, v in options.items() if v is not None}}
    token = _CALL_OPTIONS.set(merged)
    try:
        yield merged
    finally:
        _CALL_OPTIONS.reset(token)


#: the name of the algorithm step whose LLM call is being made ("answer", "linker", ...)
_CURRENT_STEP: contextvars.ContextVar[str] = contextvars.ContextVar("kgrag_llm_step", default="")

#: steps whose replies a streaming sink receives token by token unless ``stream_steps`` says
DEFAULT_STREAM_STEPS = frozenset({"answer"})


@contextmanager
def llm_step(name: str) -> Iterator[None]:
    """Name the step of the LLM calls made inside the block (the final answer call is
    ``"answer"``); :func:`kgrag.llm.steps.run_sync` / ``run_async`` name every request's call."""
    token = _CURRENT_STEP.set(name)
    try:
        yield
    finally:
        _CURRENT_STEP.reset(token)


def current_step() -> str:
    """The step name set by the innermost :func:`llm_step` ("" outside one)."""
    return _CURRENT_STEP.get()


def stream_sink() -> Callable[[str], None] | None:
    """The token sink for an LLM call made now, or ``None`` when this call is not streamed.

    A call streams when ``llm_call_options(on_token=fn)`` is active and the current step is in
    its ``stream_steps`` (default: the final answer call only), so an answer streams without
    the intermediate calls of a multi-step method leaking into it.
    """
    options = _CALL_OPTIONS.get()
    sink = options.get("on_token")
    if sink is None:
        return None
    steps = options.get("stream_steps", DEFAULT_STREAM_STEPS)
    return sink if _CURRENT_STEP.get() in steps else None


def current_call_options() -> dict[str, Any]:
    """The options set by the innermost :func:`llm_call_options` block (``{}`` outside one)."""
    return dict(_CALL_OPTIONS.get())


_LANGCHAIN_CONFIG_KEYS = ("callbacks", "tags", "metadata", "run_name")


def langchain_config() -> dict[str, Any] | None:
    """The LangChain ``RunnableConfig`` for an LLM call made now (``None`` when nothing is set)."""
    options = _CALL_OPTIONS.get()
    if not options:
        return None
    config = dict(options.get("config") or {})
    for key in _LANGCHAIN_CONFIG_KEYS:
        if key in options:
            config[key] = options[key]
    return config or None


class UsageTracker:
    """Usage counter of an adapter: a thread-safe total plus per-context ``track()`` scopes.

    A scope opened by :meth:`track` counts only the calls made in the same context (the same
    thread or ``asyncio`` task, and the threads and tasks started from it with a copy of the
    context, such as ``asyncio.to_thread``), so concurrent questions sharing one adapter each
    get their own usage.
    """

    def __init__(self) -> None:
        self.usage = Usage()
        self._lock = threading.Lock()

    def record(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        delta = Usage(1, int(prompt_tokens or 0), int(completion_tokens or 0))
        me = id(self)
        with self._lock:
            self.usage.add(delta)
            for owner, scope in _USAGE_SCOPES.get():
                if owner == me:
                    scope.add(delta)

    @contextmanager
    def track(self) -> Iterator[Usage]:
        """Count the calls and tokens this context spends inside the ``with`` block."""
        scope = Usage()
        token = _USAGE_SCOPES.set(_USAGE_SCOPES.get() + ((id(self), scope),))
        try:
            yield scope
        finally:
            _USAGE_SCOPES.reset(token)


@contextmanager
def track_usage(*llms: Any) -> Iterator[Usage]:
    """Usage of every distinct adapter in ``llms`` (``None`` skipped) inside the block, summed.

    The yielded :class:`Usage` is filled in when the block exits.
    """
    total = Usage()
    unique = {id(llm): llm for llm in llms if llm is not None}
    with ExitStack() as stack:
        scopes = [stack.enter_context(llm.track()) for llm in unique.values()]
        try:
            yield total
        finally:
            for scope in scopes:
                total.add(scope)


def exhausted_error() -> LLMCallError:
    """The typed error of a model that ran out of replies.

    A ``StopIteration`` escaping an LLM call (LangChain's ``GenericFakeChatModel`` /
    ``FakeListChatModel`` iterating past their script) would otherwise surface as a bare
    ``StopIteration``, or as ``RuntimeError: coroutine raised StopIteration`` (PEP 479) far
    from its cause.
    """
    return LLMCallError("the LLM raised StopIteration (a scripted or fake model that ran out "
                        "of replies?)")


def _exhausted(exc: Exception) -> bool:
    """Whether ``exc`` means a model ran out of replies: a ``StopIteration``, or a
    ``RuntimeError`` that Python or asyncio made of one."""
    return isinstance(exc, StopIteration) or (
        isinstance(exc, RuntimeError)
        and isinstance(exc.__cause__ or exc.__context__, StopIteration))


def _typed_failures(func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an adapter's ``complete`` / ``acomplete`` so an exhausted model is an
    :class:`~kgrag.errors.LLMCallError` (provider errors pass through unchanged)."""
    if inspect.iscoroutinefunction(func):
        @functools.wraps(func)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            try:
                return await func(*args, **kwargs)
            except (StopIteration, RuntimeError) as exc:
                if _exhausted(exc):
                    raise exhausted_error() from None
                raise
        return acall

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (StopIteration, RuntimeError) as exc:
            if _exhausted(exc):
                raise exhausted_error() from None
            raise
    return call


class BaseLLMAdapter(UsageTracker):
    """Shared behaviour: usage accounting and a thread-offloaded async fallback.

    Every subclass's ``complete`` / ``acomplete`` is wrapped (:meth:`__init_subclass__`) so a
    model that runs out of replies raises :class:`~kgrag.errors.LLMCallError` -- the same typed
    error for every method, sync and async, whichever step called the model.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("complete", "acomplete"):
            if name in cls.__dict__:
                setattr(cls, name, _typed_failures(cls.__dict__[name]))

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        raise NotImplementedError

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        return await asyncio.to_thread(self.complete, prompt, system=system)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({type(self.model).__name__})"


def _text_of(content: Any) -> str:
    """LangChain message content may be a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


class LangChainLLM(BaseLLMAdapter):
    """Wraps a LangChain chat model (``BaseChatModel``) or completion model (``BaseLLM``)."""

    def _messages(self, prompt: str, system: str | None) -> Any:
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import HumanMessage, SystemMessage

        prompt, system = _clean(prompt), (None if system is None else _clean(system))
        if not isinstance(self.model, BaseChatModel):
            return prompt if system is None else f"{system}\n\n{prompt}"
        messages: list[Any] = [SystemMessage(content=system)] if system else []
        messages.append(HumanMessage(content=prompt))
        return messages

    def _record(self, reply: Any) -> str:
        usage = getattr(reply, "usage_metadata", None) or {}
        self.record(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        return _clean(_text_of(getattr(reply, "content", reply)))

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        messages, config, sink = self._messages(prompt, system), langchain_config(), stream_sink()
        if sink is None:
            return self._record(self.model.invoke(messages, config=config))
        whole = None
        for chunk in self.model.stream(messages, config=config):
            sink(_text_of(getattr(chunk, "content", chunk)))
            whole = chunk if whole is None else whole + chunk
        return self._record("" if whole is None else whole)

    def _sync_only(self) -> bool:
        """Whether the model has no async API: LangChain's ``ChatHuggingFace`` over a local
        ``HuggingFacePipeline`` raises ``NotImplementedError`` from ``ainvoke`` and needs an
        inference endpoint's client for ``astream`` (e.g. ``kgrag.llm.local_chat_model``
        with the transformers runtime)."""
        inner = getattr(self.model, "llm", None)
        return (_has_base(self.model, "langchain_huggingface", ("ChatHuggingFace",))
                and _has_base(inner, "langchain_huggingface", ("HuggingFacePipeline",)))

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        if self._sync_only():  # its sync call in a worker thread (the context goes along)
            return await asyncio.to_thread(self.complete, prompt, system=system)
        messages, config, sink = self._messages(prompt, system), langchain_config(), stream_sink()
        if sink is None:
            return self._record(await self.model.ainvoke(messages, config=config))
        whole = None
        async for chunk in self.model.astream(messages, config=config):
            sink(_text_of(getattr(chunk, "content", chunk)))
            whole = chunk if whole is None else whole + chunk
        return self._record("" if whole is None else whole)


class LlamaIndexLLM(BaseLLMAdapter):
    """Wraps a LlamaIndex ``LLM`` (chat API when the model is a chat model, else completion)."""

    def _use_chat(self) -> bool:
        """A chat model, or a completion model rendering messages with its own chat template
        (``local_llm``'s ``LlamaCPP``: :class:`~kgrag.llm.local.ModelChatTemplate`), whose
        ``chat`` sends a system message as the model's system turn rather than as text glued
        before the prompt -- the same prompt LangChain's ``ChatLlamaCpp`` renders."""
        meta = getattr(self.model, "metadata", None)
        if getattr(meta, "is_chat_model", False):
            return True
        from kgrag.llm.local import ModelChatTemplate

        render = getattr(self.model, "messages_to_prompt", None)
        return isinstance(getattr(render, "__self__", None), ModelChatTemplate)

    def _messages(self, prompt: str, system: str | None) -> list[Any]:
        from llama_index.core.llms import ChatMessage, MessageRole

        messages = [ChatMessage(role=MessageRole.SYSTEM, content=_clean(system))] if system else []
        messages.append(ChatMessage(role=MessageRole.USER, content=_clean(prompt)))
        return messages

    def _record(self, raw: Any, text: str) -> str:
        usage: dict[str, Any] = {}
        if isinstance(raw, dict):
            usage = raw.get("usage") or {}
            if not isinstance(usage, dict):
                usage = {k: getattr(usage, k, 0) for k in ("prompt_tokens", "completion_tokens")}
        self.record(usage.get("prompt_tokens", 0) or usage.get("input_tokens", 0),
                    usage.get("completion_tokens", 0) or usage.get("output_tokens", 0))
        return _clean(text)

    def _full(self, prompt: str, system: str | None) -> str:
        return _clean(prompt if system is None else f"{system}\n\n{prompt}")

    def _streamed(self, replies: Any, sink: Callable[[str], None], chat: bool) -> str:
        last, parts = None, []
        for reply in replies:
            piece = reply.delta or ""
            sink(piece)
            parts.append(piece)
            last = reply
        return self._record(getattr(last, "raw", None), "".join(parts))

    async def _astreamed(self, replies: Any, sink: Callable[[str], None], chat: bool) -> str:
        last, parts = None, []
        async for reply in replies:
            piece = reply.delta or ""
            sink(piece)
            parts.append(piece)
            last = reply
        return self._record(getattr(last, "raw", None), "".join(parts))

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        chat, sink = self._use_chat(), stream_sink()
        if sink is not None:
            replies = (self.model.stream_chat(self._messages(prompt, system)) if chat
                       else self.model.stream_complete(self._full(prompt, system)))
            return self._streamed(replies, sink, chat)
        if chat:
            reply = self.model.chat(self._messages(prompt, system))
            return self._record(getattr(reply, "raw", None), reply.message.content or "")
        reply = self.model.complete(self._full(prompt, system))
        return self._record(getattr(reply, "raw", None), reply.text or "")

    async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
        chat, sink = self._use_chat(), stream_sink()
        if sink is not None:
            replies = (await self.model.astream_chat(self._messages(prompt, system)) if chat
                       else await self.model.astream_complete(self._full(prompt, system)))
            return await self._astreamed(replies, sink, chat)
        if chat:
            reply = await self.model.achat(self._messages(prompt, system))
            return self._record(getattr(reply, "raw", None), reply.message.content or "")
        reply = await self.model.acomplete(self._full(prompt, system))
        return self._record(getattr(reply, "raw", None), reply.text or "")


class CallableLLM(BaseLLMAdapter):
    """Wraps a plain ``fn(prompt) -> str`` (handy for scripts and scripted tests)."""

    def complete(self, prompt: str, *, system: str | None = None) -> str:
        text = _clean(str(self.model(_clean(prompt if system is None
                                            else f"{system}\n\n{prompt}"))))
        self.record()
        sink = stream_sink()
        if sink is not None:  # a plain function cannot stream: its reply is one piece
            sink(text)
        return text


def _has_base(obj: Any, module_prefix: str, class_names: tuple[str, ...]) -> bool:
    for cls in type(obj).__mro__:
        if cls.__module__.startswith(module_prefix) and cls.__name__ in class_names:
            return True
    return False


def as_llm(model: Any, *, what: str = "This step", without: str = "") -> BaseLLMAdapter:
    """Wrap ``model`` for kgrag: a LangChain model, a LlamaIndex LLM, an adapter, or a callable.

    ``None`` raises :class:`~kgrag.errors.LLMNotConfiguredError` saying how to pass one, then
    ``without``: what the method can do with no LLM (a sentence, empty when nothing).
    """
    if model is None:
        raise LLMNotConfiguredError(no_llm_message(what, without))
    if isinstance(model, BaseLLMAdapter):
        return model
    if _has_base(model, "langchain_core", ("BaseLanguageModel",)):
        return LangChainLLM(model)
    if _has_base(model, "llama_index", ("LLM", "BaseLLM")):
        return LlamaIndexLLM(model)
    if callable(model):
        return CallableLLM(model)
    raise TypeError(
        f"cannot use {type(model).__name__} as an LLM: pass a LangChain chat model, a LlamaIndex "
        "LLM, or a function prompt -> str"
    )


def no_llm_message(what: str, without: str = "") -> str:
    """:data:`NO_LLM_HELP` for ``what``, followed by the method's own ``without`` sentence."""
    return NO_LLM_HELP.format(what=what) + (f" {without}" if without else "")


def optional_llm(model: Any) -> BaseLLMAdapter | None:
    """``as_llm`` for methods with an LLM-free mode: ``None`` stays ``None``."""
    return None if model is None else as_llm(model)


LLMFactory = Callable[[], Any]
