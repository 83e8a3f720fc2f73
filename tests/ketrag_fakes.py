"""Deterministic fake LLMs and embedders for the KET-RAG tests.

:class:`RecordResponder` reads the passage out of an extraction prompt and writes the record
format a good LLM would: entities = runs of capitalised words, relations = entity pairs that
share a sentence (label = the words between them). Gleaning prompts get ``["done"]``, summary
prompts the joined descriptions, answer prompts a two-hop "follow the entity chain" answer.
Every call is recorded (kind and prompt), so tests can count calls and check what was sent.
It is wrapped as a real LangChain ``BaseChatModel`` and as the shared scripted LlamaIndex LLM.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llm_fakes import ScriptedLlamaLLM

from kgrag.methods.ketrag.prompts import (
    ANSWER_MARKER,
    GLEANING_MARKER,
    SUMMARY_MARKER,
    TEXT_END,
    TEXT_START,
)
from kgrag.text.sentences import split_sentences

_NOT_NAMES = {"The", "It", "He", "She", "They", "A", "An", "In", "This", "Which", "What", "Who",
              "Where", "When", "Its", "His", "Her", "There", "Data", "Question", "Answer"}
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def names_in(sentence: str) -> list[str]:
    out = []
    for m in _NAME.finditer(sentence):
        words = m.group(0).split()
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        if words:
            out.append(" ".join(words))
    return list(dict.fromkeys(out))


def records_for(text: str) -> str:
    lines, seen = [], {}
    for sentence in split_sentences(text):
        names = names_in(sentence)
        for name in names:
            if name not in seen:
                seen[name] = sentence
                lines.append(json.dumps(["entity", name, "thing", sentence]))
        for a, b in zip(names, names[1:]):
            between = sentence[sentence.find(a) + len(a):sentence.find(b)].strip(" ,.").lower()
            label = " ".join(between.split()[:4]) or "related to"
            lines.append(json.dumps(["relation", a, label, b, 8, sentence]))
    lines.append('["done"]')
    return "\n".join(lines)


def chain_answer(question: str, context: str) -> str:
    """Follow entities from the question through two context sentences (a two-hop reader)."""
    sentences = [s for line in context.splitlines() for s in split_sentences(line.split("|")[-1])]
    visited = set(names_in(question))
    current = set(visited)
    answer = None
    for _ in range(2):
        found = None
        for s in sentences:
            names = names_in(s)
            if current & set(names):
                fresh = [n for n in names if n not in visited]
                if fresh:
                    found = fresh[-1]
                    break
        if found is None:
            break
        visited.add(found)
        current = {found}
        answer = found
    return answer or "Insufficient information."


class RecordResponder:
    """Routes a prompt to the right fake reply and records every call (thread-safe)."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_after = fail_after
        self._lock = threading.Lock()

    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for kind, _ in self.calls:
            out[kind] = out.get(kind, 0) + 1
        return out

    def __call__(self, prompt: str) -> str:
        if GLEANING_MARKER in prompt:
            kind, reply = "glean", '["done"]'
        elif TEXT_START in prompt:
            text = prompt.rsplit(TEXT_START, 1)[1].split(TEXT_END, 1)[0].strip()
            kind, reply = "extract", records_for(text)
        elif SUMMARY_MARKER in prompt:
            descs = [line[2:] for line in prompt.splitlines() if line.startswith("- ")]
            kind, reply = "summarize", " ".join(dict.fromkeys(descs))
        elif ANSWER_MARKER in prompt:
            question = prompt.rsplit("Question:", 1)[1].split("\n", 1)[0].strip()
            context = prompt.split("Data tables:", 1)[1].rsplit("Question:", 1)[0]
            kind, reply = "answer", chain_answer(question, context)
        else:
            kind, reply = "other", "I do not understand."
        with self._lock:
            if self.fail_after is not None and len(self.calls) >= self.fail_after:
                raise RuntimeError("simulated provider failure (interrupted run)")
            self.calls.append((kind, prompt))
        return reply


class RecordChatModel(BaseChatModel):
    """A LangChain chat model backed by a :class:`RecordResponder`."""

    responder: Any

    @property
    def _llm_type(self) -> str:
        return "ketrag-record-fake"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        prompt = "\n\n".join(str(m.content) for m in messages)
        reply = self.responder(prompt)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def RecordLlamaLLM(responder: Any) -> ScriptedLlamaLLM:  # noqa: N802 (was a class)
    """A LlamaIndex LLM backed by a :class:`RecordResponder` (the shared scripted LLM)."""
    return ScriptedLlamaLLM(responder=responder, model_name="ketrag-record-fake")


class HashingEmbedder:
    """Bag-of-words feature hashing (lower-cased words), L2-normalised; deterministic and fast."""

    name = "hashing-test"

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimension, np.float32)
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.dimension] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_documents(self, texts):
        return np.stack([self._vec(t) for t in texts]) if len(texts) else \
            np.zeros((0, self.dimension), np.float32)

    def embed_query(self, text):
        return self._vec(text)


#: The responder behind :func:`fake_chat_model` (module level so CLI tests can count its calls).
CLI_RESPONDER = RecordResponder()


def fake_chat_model() -> RecordChatModel:
    """A factory for ``--llm ketrag_fakes:fake_chat_model`` in the CLI tests."""
    return RecordChatModel(responder=CLI_RESPONDER)
