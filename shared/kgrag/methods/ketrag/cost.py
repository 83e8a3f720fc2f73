"""Indexing cost accounting, and its projection to other budget rates (e.g. beta = 1).

The first extraction prompt of every chunk is rendered and counted for *all* chunks at index
time, so the first-pass prompt tokens of any beta are exact even when no LLM was called (the
LLM-free beta = 0 index). The other costs (gleaning calls, description summaries, completion
tokens) are only known for the chunks actually extracted; they are projected to another beta
by scaling the measured figures: calls and the prompt tokens beyond the first pass with the
number of chunks, completion tokens with the number of chunk tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kgrag.methods.ketrag.knn import select_key_chunks
from kgrag.methods.ketrag.prompts import extraction_prompt
from kgrag.text.tokens import TextTokenizer


def first_prompt_tokens(chunk_texts: Sequence[str], entity_types: Sequence[str],
                        tokenizer: TextTokenizer) -> np.ndarray:
    """Tokens of the first extraction prompt of every chunk (template + chunk)."""
    template = tokenizer.count(extraction_prompt("", entity_types))
    counter = getattr(tokenizer, "count_many", None)
    counts = counter(list(chunk_texts)) if counter else [tokenizer.count(t) for t in chunk_texts]
    return np.asarray(counts, dtype=np.int64) + template


def measured_totals(llm_stats: dict[str, dict[str, int]]) -> dict[str, int]:
    total = {"calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for stats in llm_stats.values():
        for key in total:
            total[key] += int(stats.get(key, 0))
    return total


def project(beta: float, *, pagerank: np.ndarray, chunk_tokens: np.ndarray,
            prompt_tokens: np.ndarray, selection: str, seed: int, max_gleanings: int,
            measured_key_chunks: np.ndarray,
            llm_stats: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Projected extraction cost of building the skeleton with budget rate ``beta``."""
    chosen = select_key_chunks(pagerank, beta, method=selection, seed=seed)
    out: dict[str, Any] = {
        "beta": beta,
        "key_chunks": len(chosen),
        "first_extraction_calls": len(chosen),
        "first_extraction_prompt_tokens": int(prompt_tokens[chosen].sum()),
        "max_gleaning_calls": len(chosen) * max_gleanings,
        "chunk_tokens": int(chunk_tokens[chosen].sum()),
    }
    measured = measured_totals(llm_stats)
    n_key = len(measured_key_chunks)
    base_tokens = int(chunk_tokens[measured_key_chunks].sum()) if n_key else 0
    if measured["calls"] and n_key and base_tokens:
        # calls and the prompt tokens beyond the first pass scale with the number of chunks,
        # completion tokens with the amount of text extracted from
        count_scale = len(chosen) / n_key
        text_scale = out["chunk_tokens"] / base_tokens
        first_pass_measured = int(prompt_tokens[measured_key_chunks].sum())
        extra_prompt = max(0, measured["prompt_tokens"] - first_pass_measured)
        out["estimated_total"] = {
            "calls": int(round(measured["calls"] * count_scale)),
            "prompt_tokens": int(out["first_extraction_prompt_tokens"]
                                 + round(extra_prompt * count_scale)),
            "completion_tokens": int(round(measured["completion_tokens"] * text_scale)),
            "scaled_from_beta": None,
        }
    return out


def cost_report(*, beta: float, n_chunks: int, key_chunks: np.ndarray, pagerank: np.ndarray,
                chunk_tokens: np.ndarray, prompt_tokens: np.ndarray, selection: str, seed: int,
                max_gleanings: int, llm_stats: dict[str, dict[str, int]],
                provider_usage: dict[str, int] | None, failed_chunks: int) -> dict[str, Any]:
    """The indexing cost report stored with the index (``index.cost``)."""
    args: dict[str, Any] = dict(pagerank=pagerank, chunk_tokens=chunk_tokens,
                                prompt_tokens=prompt_tokens,
                selection=selection, seed=seed, max_gleanings=max_gleanings,
                measured_key_chunks=key_chunks, llm_stats=llm_stats)
    projections = {f"{b:g}": project(b, **args) for b in sorted({beta, 1.0})}
    for p in projections.values():
        if "estimated_total" in p:
            p["estimated_total"]["scaled_from_beta"] = beta
    return {
        "beta": beta,
        "chunks": n_chunks,
        "key_chunks": len(key_chunks),
        "failed_chunks": failed_chunks,
        "llm": {"by_kind": llm_stats, "total": measured_totals(llm_stats),
                "provider_reported": provider_usage or {}},
        "projection": projections,
        "token_unit": "tokens of the index tokenizer",
    }
