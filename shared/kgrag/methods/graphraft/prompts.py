"""GraphRAFT prompts (our own wording, carrying the paper's inputs and output formats).

* L0 -- entity extraction: few-shot, entities separated by ``|`` (paper App. A.1).
* L1 -- query selection for chat models without token scores: choose from numbered candidates.
* L2 -- subgraph reasoning: the question plus one ``pattern: / name:`` block per retrieved node
  (paper Fig. 4); answer names separated by ``|``.
"""

from __future__ import annotations

from typing import Any, Sequence

from kgrag.llm.prompts import Prompt, template_variables

ENTITY_SYSTEM = (
    "You find the named entities a question is about. Reply with the entities exactly as they "
    "are written in the question, separated by '|', and nothing else. Reply with an empty line "
    "if the question names no entity."
)

#: (question, reply) pairs; replace them with examples from your own graph for best results.
DEFAULT_ENTITY_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Which drugs treat strongyloidiasis and are metabolised by CYP3A4?",
     "strongyloidiasis|CYP3A4"),
    ("Who directed the films that Meg Ryan starred in?", "Meg Ryan"),
    ("What genes are associated with melanoma and interact with TNFSF8?", "melanoma|TNFSF8"),
)


ENTITY_TEMPLATE = '{examples}\n\nQ: "{question}"\nA:'


def _fill(template: str, **values: Any) -> str:
    used = template_variables(template)
    return template.format(**{k: v for k, v in values.items() if k in used})


def entity_prompt(question: str, examples: Sequence[tuple[str, str]] = DEFAULT_ENTITY_EXAMPLES,
                  *, template: str = ENTITY_TEMPLATE) -> str:
    shots = "\n\n".join(f'Q: "{q}"\nA: {a}' for q, a in examples)
    return _fill(template, examples=shots, question=question)


SELECT_SYSTEM = (
    "You choose the graph queries that retrieve the answer to a question. Only the numbered "
    "queries exist; you cannot write new ones."
)


SELECTION_TEMPLATE = (
    "Question: {question}\n\nCandidate queries:\n{candidates}\n\n"
    "Reply with the numbers of the {m} most useful queries, best first, separated by commas "
    "(for example: 3, 1). Reply with numbers only."
)


def selection_prompt(question: str, candidates: Sequence[str], m: int, *,
                     template: str = SELECTION_TEMPLATE) -> str:
    listing = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(candidates))
    return _fill(template, question=question, candidates=listing, m=m)


ANSWER_SYSTEM = (
    "You answer questions from retrieved knowledge-graph nodes. Reply with the names of the nodes "
    "that answer the question, exactly as written after 'name:', separated by '|', best first, "
    "and nothing else."
)


ANSWER_TEMPLATE = ("Given the information below, return the correct nodes for the following "
                   "question: {question}\nRetrieved information:\n{info}\n")


def answer_prompt(question: str, blocks: Sequence[str], *, template: str = ANSWER_TEMPLATE) -> str:
    info = "\n\n".join(blocks) if blocks else "(nothing was retrieved)"
    return _fill(template, question=question, info=info)


#: GraphRAFT's prompts by name: ``GraphRAFT(..., prompts={name: template})`` replaces them.
PROMPTS: dict[str, Prompt] = {
    "entity_system": Prompt(ENTITY_SYSTEM, (), "System message of L0 entity extraction."),
    "entity": Prompt(ENTITY_TEMPLATE, ("examples", "question"),
                     "L0: the question's entities separated by '|' ({examples}: few-shot)."),
    "select_system": Prompt(SELECT_SYSTEM, (), "System message of L1 query selection."),
    "select": Prompt(SELECTION_TEMPLATE, ("question", "candidates", "m"),
                     "L1 (chat models): pick {m} of the numbered candidate queries."),
    "answer_system": Prompt(ANSWER_SYSTEM, (), "System message of the L2 answer call."),
    "answer": Prompt(ANSWER_TEMPLATE, ("question", "info"),
                     "L2: answer names from the retrieved 'pattern: / name:' blocks ({info})."),
}
