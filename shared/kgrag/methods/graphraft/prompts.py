"""GraphRAFT prompts (our own wording, carrying the paper's inputs and output formats).

* L0 -- entity extraction: few-shot, entities separated by ``|`` (paper App. A.1).
* L1 -- query selection for chat models without token scores: choose from numbered candidates.
* L2 -- subgraph reasoning: the question plus one ``pattern: / name:`` block per retrieved node
  (paper Fig. 4); answer names separated by ``|``.
"""

from __future__ import annotations

from typing import Sequence

ENTITY_SYSTEM = (
    "You find the named entities a question is about. Reply with the entities exactly as they "
    "are written in the question, separated by '|', and nothing else. Reply with an empty line "
    "if the question names no entity."
)

#: (question, reply) pairs; replace them with examples from your own graph for best results.
DEFAULT_ENTITY_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Which drugs treat strongyloidiasis and are metabolised by CYP3A4?", "strongyloidiasis|CYP3A4"),
    ("Who directed the films that Meg Ryan starred in?", "Meg Ryan"),
    ("What genes are associated with melanoma and interact with TNFSF8?", "melanoma|TNFSF8"),
)


def entity_prompt(question: str, examples: Sequence[tuple[str, str]] = DEFAULT_ENTITY_EXAMPLES) -> str:
    shots = "\n\n".join(f'Q: "{q}"\nA: {a}' for q, a in examples)
    return f'{shots}\n\nQ: "{question}"\nA:'


SELECT_SYSTEM = (
    "You choose the graph queries that retrieve the answer to a question. Only the numbered "
    "queries exist; you cannot write new ones."
)


def selection_prompt(question: str, candidates: Sequence[str], m: int) -> str:
    listing = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(candidates))
    return (
        f"Question: {question}\n\nCandidate queries:\n{listing}\n\n"
        f"Reply with the numbers of the {m} most useful queries, best first, separated by commas "
        "(for example: 3, 1). Reply with numbers only."
    )


ANSWER_SYSTEM = (
    "You answer questions from retrieved knowledge-graph nodes. Reply with the names of the nodes "
    "that answer the question, exactly as written after 'name:', separated by '|', best first, "
    "and nothing else."
)


def answer_prompt(question: str, blocks: Sequence[str]) -> str:
    info = "\n\n".join(blocks) if blocks else "(nothing was retrieved)"
    return (
        f"Given the information below, return the correct nodes for the following question: "
        f"{question}\nRetrieved information:\n{info}\n"
    )
