"""Grounded constrained decoding: a beam search that can only spell one of the candidate queries.

Each candidate's text is tokenised (plus EOS) into a trie. At every step a beam may only extend
with a token that keeps it on a trie path (paper §4.2, Eq. 2); once it has emitted EOS it is
finished. Any model that gives next-token scores plugs in through :class:`TokenScorer`.

Scoring follows Hugging Face beam search with a masking logits processor: the model's
log-softmax over the *full* vocabulary is computed first, then disallowed tokens are masked, so a
finished beam's score is the model's own total log-probability of the candidate. Beams are ranked
by that total (no length normalisation). With ``beam_width >= len(candidates)`` nothing is ever
pruned (a trie level never has more nodes than there are candidates), so the result equals
exhaustive scoring of every candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from kgrag.errors import KgragError


@runtime_checkable
class TokenScorer(Protocol):
    """A model that scores next tokens: the only thing constrained decoding needs."""

    eos_token_id: int

    def encode(self, text: str) -> list[int]:
        """Token ids of a candidate (no special tokens)."""

    def next_token_logits(self, prompt: str, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        """Logits ``(len(prefixes), vocab)`` for the token after ``prompt + prefix``, per prefix."""


@dataclass
class _TrieNode:
    children: dict[int, "_TrieNode"] = field(default_factory=dict)
    candidate: int | None = None  # set on the node reached by the final EOS


class CandidateTrie:
    """Token trie of the candidates; ``allowed(prefix)`` is the set M of legal next tokens."""

    def __init__(self, token_sequences: Sequence[Sequence[int]], eos_token_id: int) -> None:
        self.root = _TrieNode()
        self.eos = eos_token_id
        for index, tokens in enumerate(token_sequences):
            node = self.root
            for tok in list(tokens) + [eos_token_id]:
                node = node.children.setdefault(int(tok), _TrieNode())
            if node.candidate is None:  # two candidates with identical tokens: the first wins
                node.candidate = index

    def node(self, prefix: Sequence[int]) -> _TrieNode | None:
        node = self.root
        for tok in prefix:
            child = node.children.get(int(tok))
            if child is None:
                return None
            node = child
        return node

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        node = self.node(prefix)
        return sorted(node.children) if node is not None else []


@dataclass(frozen=True)
class Beam:
    tokens: tuple[int, ...]
    logprob: float
    candidate: int | None = None  # index of the candidate once finished


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def constrained_beam_search(
    scorer: TokenScorer,
    prompt: str,
    candidates: Sequence[str],
    *,
    beam_width: int = 5,
    max_steps: int | None = None,
) -> list[tuple[int, float]]:
    """Rank candidates by constrained beam search; returns ``[(candidate index, logprob), ...]``.

    At most ``min(beam_width, len(candidates))`` distinct candidates are returned, best first.
    Every returned index is a member of ``candidates`` by construction.
    """
    if not candidates:
        return []
    if beam_width < 1:
        raise ValueError("beam_width must be at least 1")
    sequences = [scorer.encode(c) for c in candidates]
    trie = CandidateTrie(sequences, scorer.eos_token_id)
    width = min(beam_width, len(candidates))
    limit = max_steps if max_steps is not None else max(len(s) for s in sequences) + 2
    beams = [Beam((), 0.0)]
    finished: list[Beam] = []
    for _ in range(limit):
        live = [b for b in beams if b.candidate is None]
        if not live:
            break
        logits = np.asarray(scorer.next_token_logits(prompt, [b.tokens for b in live]))
        if logits.ndim != 2 or logits.shape[0] != len(live):
            raise KgragError(f"TokenScorer returned logits of shape {logits.shape}, "
                             f"expected ({len(live)}, vocab)")
        logprobs = _log_softmax(logits)
        expansions: list[Beam] = []
        for beam, row in zip(live, logprobs):
            node = trie.node(beam.tokens)
            assert node is not None  # beams only ever follow trie edges
            for tok, child in node.children.items():
                if tok >= row.shape[0]:
                    raise KgragError(f"token id {tok} outside the scorer's vocabulary")
                expansions.append(Beam(beam.tokens + (tok,), beam.logprob + float(row[tok]),
                                       child.candidate))
        # deterministic: best score first, ties by token sequence
        expansions.sort(key=lambda b: (-b.logprob, b.tokens))
        beams = []
        for b in expansions:
            if b.candidate is not None:
                finished.append(b)
            else:
                beams.append(b)
        finished.sort(key=lambda b: (-b.logprob, b.tokens))
        finished = finished[:width]
        beams = beams[:width]
        # a live beam can only lose score; stop once it cannot beat the width-th finished beam
        if len(finished) >= width and (not beams or beams[0].logprob <= finished[-1].logprob):
            break
    return [(b.candidate, b.logprob) for b in finished[:width]]  # type: ignore[misc]


def exhaustive_scores(scorer: TokenScorer, prompt: str, candidates: Sequence[str]) -> list[float]:
    """Total log-probability of each candidate (+EOS) under the scorer (reference for tests)."""
    scores = []
    for text in candidates:
        tokens = scorer.encode(text) + [scorer.eos_token_id]
        prefixes = [tokens[:i] for i in range(len(tokens))]
        rows = _log_softmax(np.asarray(scorer.next_token_logits(prompt, prefixes)))
        scores.append(float(sum(rows[i, tok] for i, tok in enumerate(tokens))))
    return scores


class TransformersTokenScorer:
    """A :class:`TokenScorer` over a Hugging Face causal LM and its tokenizer.

    ``prompt_template`` turns the question into the model's prompt (e.g. a chat template); the
    candidate is generated right after it, so it is tokenised on its own without special tokens,
    as in the reference implementation. Runs the model without a KV cache: simple and exact, fine
    for the short candidate strings this is used for.
    """

    def __init__(self, model: object, tokenizer: object, *, prompt_template: str = "{question}\n",
                 device: str = "cpu") -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.prompt_template = prompt_template
        self.device = device
        eos = getattr(tokenizer, "eos_token_id", None)
        if eos is None:
            eos = getattr(tokenizer, "sep_token_id", None)
        if eos is None:
            raise KgragError(
                "the tokenizer has no eos_token_id (or sep_token_id) to end candidates")
        self.eos_token_id = int(eos)
        self._logits_to_keep: bool | None = None

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]

    def next_token_logits(self, prompt: str, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        import torch

        prompt_ids = self.encode(self.prompt_template.format(question=prompt))
        rows = [prompt_ids + list(p) for p in prefixes]
        width = max(len(r) for r in rows)
        pad = 0
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):  # left-pad so the last position is each row's next token
            input_ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            attention[i, width - len(r):] = 1
        position_ids = (attention.cumsum(-1) - 1).clamp(min=0)
        extra = {"logits_to_keep": 1} if self._keeps_last_logits() else {}
        with torch.no_grad():
            out = self.model(input_ids=input_ids.to(self.device),  # type: ignore[operator]
                             attention_mask=attention.to(self.device),
                             position_ids=position_ids.to(self.device), **extra)
        return out.logits[:, -1, :].float().cpu().numpy()

    def _keeps_last_logits(self) -> bool:
        """Whether the model can compute logits for the last position only (transformers >= 4.45).

        Without it, a forward pass materialises ``batch x length x vocab`` logits, which for a
        30k vocabulary dominates the cost of scoring short candidates.
        """
        if self._logits_to_keep is None:
            import inspect

            forward = getattr(self.model, "forward", None)
            try:
                self._logits_to_keep = forward is not None and \
                    "logits_to_keep" in inspect.signature(forward).parameters
            except (TypeError, ValueError):
                self._logits_to_keep = False
        return self._logits_to_keep


def chat_prompt_template(tokenizer: object, system: str | None = None) -> str:
    """A ``prompt_template`` for :class:`TransformersTokenScorer` from a tokenizer's chat template.

    The query selector is fine-tuned on chat records (user = question, assistant = query; see
    :mod:`~kgrag.methods.graphraft.training`), so at inference the candidate must be scored right
    after the same rendered prompt: the user turn plus the assistant header. This renders the
    chat template once around a placeholder and escapes every other brace, so
    ``template.format(question=q)`` reproduces the training prompt for any question.
    """
    marker = "\x00QUESTION\x00"
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": marker}]
    rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        messages, tokenize=False, add_generation_prompt=True)
    if marker not in rendered:
        raise KgragError("the tokenizer's chat template dropped the user message")
    before, after = rendered.split(marker, 1)
    escape = lambda s: s.replace("{", "{{").replace("}", "}}")  # noqa: E731
    return escape(before) + "{question}" + escape(after)
