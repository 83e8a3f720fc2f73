"""Skeleton extraction on the key chunks: a bounded worker pool, a resumable reply cache, costs.

Every LLM call goes through :class:`CachedLLM`, which looks the prompt up in a JSON-lines cache
file first (``sha256(model, system, prompt)`` -> reply and token counts) and appends each new
reply as soon as it arrives (flushed, one line per call; never pickle). An interrupted run
(Ctrl-C, a crash, a provider error) therefore loses at most the calls in flight: running it
again with the same ``cache_dir`` replays the cached replies for free and pays only for the rest.
A torn last line (killed while writing) is skipped on load.

Chunks are extracted concurrently by a ``ThreadPoolExecutor`` with ``max_workers`` threads, with
a tqdm progress bar; Ctrl-C cancels the queued chunks and re-raises.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.errors import LLMOutputError
from kgrag.methods.ketrag.parsing import ParsedRecords, parse_records
from kgrag.methods.ketrag.prompts import extraction_prompt, gleaning_prompt
from kgrag.text.tokens import TextTokenizer

log = logging.getLogger(__name__)

CACHE_FILE = "llm_cache.jsonl"


@dataclass
class CallStats:
    """Calls and tokens of one kind of LLM call (tokens counted with the index's tokenizer)."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt_tokens: int, completion_tokens: int, cached: bool) -> None:
        self.calls += 1
        self.cached_calls += int(cached)
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "cached_calls": self.cached_calls,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


class ReplyCache:
    """Append-only JSON-lines cache of LLM replies; ``path=None`` keeps it in memory only."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.skipped_lines = 0
        if self.path is not None and self.path.is_file():
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                        if isinstance(entry, dict) and isinstance(entry.get("key"), str) \
                                and isinstance(entry.get("reply"), str):
                            self._entries[entry["key"]] = entry
                            continue
                    except json.JSONDecodeError:
                        pass
                    self.skipped_lines += 1

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._entries[entry["key"]] = entry
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
                fh.flush()


def model_namespace(llm: Any) -> str:
    """A string naming the model behind an adapter, part of every cache key."""
    model = getattr(llm, "model", llm)
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return f"{type(model).__name__}:{value}"
    return type(model).__name__


class CachedLLM:
    """Calls an LLM adapter through a :class:`ReplyCache`, counting calls and tokens per kind."""

    def __init__(self, llm: Any, cache: ReplyCache, tokenizer: TextTokenizer,
                 namespace: str | None = None) -> None:
        self.llm = llm
        self.cache = cache
        self.tokenizer = tokenizer
        self.namespace = namespace if namespace is not None else model_namespace(llm)
        self.stats: dict[str, CallStats] = {}
        self._lock = threading.Lock()

    def key(self, prompt: str, system: str | None = None) -> str:
        raw = "\x00".join((self.namespace, system or "", prompt))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def complete(self, prompt: str, *, kind: str, system: str | None = None) -> str:
        key = self.key(prompt, system)
        entry = self.cache.get(key)
        cached = entry is not None
        if entry is None:
            reply = self.llm.complete(prompt, system=system)
            entry = {"key": key, "kind": kind, "reply": reply,
                     "prompt_tokens": self.tokenizer.count((system or "") + prompt),
                     "completion_tokens": self.tokenizer.count(reply)}
            self.cache.put(entry)
        with self._lock:
            self.stats.setdefault(kind, CallStats()).add(
                int(entry.get("prompt_tokens", 0)), int(entry.get("completion_tokens", 0)), cached)
        return entry["reply"]

    def stats_dict(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {k: v.as_dict() for k, v in sorted(self.stats.items())}


@dataclass
class ChunkExtraction:
    """What the LLM extracted from one key chunk (merged over the first call and gleanings)."""

    chunk_id: int
    records: ParsedRecords = field(default_factory=ParsedRecords)
    calls: int = 0
    failed: bool = False
    #: why the first call's replies were unusable (when ``failed``)
    error: str = ""


def _template(templates: dict[str, str], name: str) -> dict[str, str]:
    return {"template": templates[name]} if name in templates else {}


def extract_chunk(caller: CachedLLM, chunk_id: int, text: str, entity_types: Sequence[str],
                  max_gleanings: int = 1, retries: int = 1,
                  prompts: Any = None, on_unusable_reply: str = "raise") -> ChunkExtraction:
    """First extraction call (re-asked up to ``retries`` times on unparseable output), then up
    to ``max_gleanings`` follow-ups asking for missed records; stops when a follow-up adds none.

    When every try is unusable: ``on_unusable_reply="raise"`` raises
    :class:`~kgrag.errors.LLMOutputError`; ``"empty"`` logs a warning and returns the chunk
    with no records (``failed``, ``error``)."""
    result = ChunkExtraction(chunk_id)
    templates = {} if prompts is None else {
        "extraction": prompts.template("extraction"), "gleaning": prompts.template("gleaning")}
    prompt = extraction_prompt(text, entity_types, **_template(templates, "extraction"))
    attempt = prompt
    replies: list[str] = []
    error: LLMOutputError | None = None
    for _ in range(retries + 1):
        reply = caller.complete(attempt, kind="extract")
        result.calls += 1
        try:
            result.records.extend(parse_records(reply))
            replies.append(reply)
            break
        except LLMOutputError as exc:
            error = exc
            attempt = (f"{prompt}\n(Your previous reply could not be read: {exc}. "
                       "Write only JSON-array records, one per line.)\n")
    else:
        message = (f"KET-RAG skeleton extraction: no usable records for chunk {chunk_id} after "
                   f"{retries + 1} tries ({error})")
        if on_unusable_reply == "raise":
            raise LLMOutputError(message) from error
        result.failed, result.error = True, message
        log.warning("%s; the chunk is indexed without skeleton records "
                    "(on_unusable_reply='empty')", message)
        return result
    for _ in range(max_gleanings):
        reply = caller.complete(gleaning_prompt(prompt, replies,
                                                **_template(templates, "gleaning")),
                                kind="glean")
        result.calls += 1
        try:
            more = parse_records(reply)
        except LLMOutputError:
            break
        replies.append(reply)
        result.records.extend(more)
        if more.count == 0:
            break
    return result


def run_pool(tasks: Iterable[Callable[[], Any]], *, max_workers: int, desc: str,
             total: int, progress: bool = True) -> list[Any]:
    """Run callables on a bounded thread pool with a progress bar; results in task order.

    Ctrl-C (or any task error) cancels the tasks not yet started and re-raises; completed
    calls are already in the reply cache.
    """
    from tqdm.auto import tqdm

    tasks = list(tasks)
    results: list[Any] = [None] * len(tasks)
    if not tasks:
        return results
    executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ketrag")
    bar = tqdm(total=total, desc=desc, disable=not progress, unit="chunk")
    try:
        # each task runs in a copy of the caller's context, so usage scopes and per-call LLM
        # options (kgrag.llm.base) opened around the pool see the calls made inside it
        futures = {executor.submit(contextvars.copy_context().run, task): i
                   for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            bar.update(1)
    except BaseException:
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        bar.close()
    executor.shutdown(wait=True)
    return results


def extract_key_chunks(caller: CachedLLM, chunks: Sequence[tuple[int, str]],
                       entity_types: Sequence[str], *, max_gleanings: int = 1,
                       max_workers: int = 4, progress: bool = True,
                       prompts: Any = None,
                       on_unusable_reply: str = "raise") -> list[ChunkExtraction]:
    """Extract every ``(chunk_id, text)`` concurrently; results in the input order (an
    unusable chunk under ``on_unusable_reply="raise"`` stops the pool and raises)."""
    tasks = [
        (lambda cid=cid, text=text: extract_chunk(caller, cid, text, entity_types, max_gleanings,
                                                  prompts=prompts,
                                                  on_unusable_reply=on_unusable_reply))
        for cid, text in chunks
    ]
    return run_pool(tasks, max_workers=max_workers, desc="KET-RAG skeleton extraction",
                    total=len(tasks), progress=progress)
