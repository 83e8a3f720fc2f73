"""UltRAG's two prompts: query generation and arbitration (our wording; the paper's is unpublished).

The paper states what the prompts contain, not their text:

* **query generation** -- the question, the DSL's rules, the *whole* relation list (the LLM must
  use relation ids, not labels) and, when known, the seed entities;
* **arbitration** -- the question and the top-50 entities ranked by the executor with their
  probabilities; the LLM returns the final answer set and may use its own knowledge.

Relations are listed as ``P<i>: label`` (plus the relation description when the graph has one).
Seeds are listed as ``Q<i>: name``. Without seeds, the LLM writes each leaf as a quoted mention,
which the entity linker resolves (Eq. 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgrag.llm.prompts import Prompt, template_variables
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

QUERY_SYSTEM = (
    "You translate questions into logical queries over a knowledge graph. A query executor "
    "runs your query over the whole graph, so only the query's logic and the relation ids matter."
)

QUERY_RULES = """\
Query language:
- X -> P7 follows relation P7 from every entity of X (a projection). X -> P7_inv follows P7
  backwards, from the tail of an edge to its head. Projections chain left to right:
  X -> P7 -> P3.
- AND(A, B, ...) keeps the entities that are answers of all of A, B, ... (two or more queries).
- A leaf is an entity: {leaf_rule} A leaf on its own is not a query: always follow at least one
  relation from it.
- Refer to relations only by their ids from the list below (P<digits>, optionally with _inv),
  never by their labels.

Example: "Which universities employ Turing Award winners who work on deep learning?", with
P1 = award received, P2 = field of work, P4 = employer, becomes
AND({turing} -> P1_inv, {deep} -> P2_inv) -> P4"""

LEAF_RULE_MENTIONS = ('write its name in double quotes, as it would appear in the graph, e.g. '
                      '"Geoffrey Hinton".')
LEAF_RULE_SEEDS = ('use the id of a seed entity listed below (e.g. Q12), or, for an entity that '
                   'is not listed, its name in double quotes.')

QUERY_TEMPLATE = """\
Write one logical query whose answers are the answers to the question.

{rules}

Relations (id: label):
{relations}
{seeds}
Question: {question}

Reply with the query inside <query></query> tags and nothing else."""

ARBITRATION_SYSTEM = (
    "You pick the final answers to a question from candidates that a knowledge-graph query "
    "executor ranked. Scores are membership probabilities; use them, the candidate names and "
    "your own knowledge to choose."
)

ARBITRATION_TEMPLATE = """\
Question: {question}

The executor ran the query {query} and ranked these candidates (id | name | probability),
highest first:
{candidates}

Return every candidate that answers the question (possibly none, possibly several). If you are
sure of an answer that is not listed, you may add its name.
Reply with one answer id or name per line inside <answers></answers> tags."""


def relation_lines(vocabulary: GraphVocabulary,
                   descriptions: Mapping[str, str] | None = None,
                   labels: Mapping[str, Sequence[str]] | None = None) -> str:
    """Every relation as ``id: label`` (``: description`` appended when known), in id order.

    ``labels`` (a graph's ``relation_labels``) name relations whose ids are their names
    (``P57: director``) and are shown next to other names (``P3: directed_by (director)``).
    """
    descriptions, labels = descriptions or {}, labels or {}
    lines = []
    for rel, name in enumerate(vocabulary.relation_names):
        shown = name
        if labels.get(name):
            shown = (", ".join(labels[name]) if vocabulary.relation_ids_are_names
                     else f"{name} ({', '.join(labels[name])})")
        line = f"{vocabulary.relation_id(rel)}: {shown}"
        if descriptions.get(name):
            line += f" -- {descriptions[name]}"
        lines.append(line)
    return "\n".join(lines)


def query_prompt(question: str, vocabulary: GraphVocabulary, *,
                 seeds: Sequence[tuple[str, str]] = (),
                 descriptions: Mapping[str, str] | None = None,
                 labels: Mapping[str, Sequence[str]] | None = None,
                 template: str = QUERY_TEMPLATE) -> str:
    """The query-generation prompt (relation list, ``(id, name)`` seeds, the question)."""
    if seeds:
        leaf_rule = LEAF_RULE_SEEDS
        seed_text = "\nSeed entities (id: name):\n" + "\n".join(
            f"{seed_id}: {name}" for seed_id, name in seeds) + "\n"
        turing, deep = "Q189", "Q192"
    else:
        leaf_rule, seed_text = LEAF_RULE_MENTIONS, ""
        turing, deep = '"Turing Award"', '"deep learning"'
    rules = QUERY_RULES.format(leaf_rule=leaf_rule, turing=turing, deep=deep)
    return _fill(template, rules=rules,
                 relations=relation_lines(vocabulary, descriptions, labels),
                 seeds=seed_text, question=question.strip())


def _fill(template: str, **values: str) -> str:
    used = template_variables(template)
    return template.format(**{k: v for k, v in values.items() if k in used})


def candidate_lines(candidates: Sequence[tuple[str, str, float]]) -> str:
    """``rank. id | name | probability`` lines, in the given (already sorted) order."""
    return "\n".join(f"{i}. {cid} | {name} | {score:.3f}"
                     for i, (cid, name, score) in enumerate(candidates, start=1))


def arbitration_prompt(question: str, query_text: str,
                       candidates: Sequence[tuple[str, str, float]], *,
                       template: str = ARBITRATION_TEMPLATE) -> str:
    """The arbitration prompt over ``(id, name, probability)`` candidates, best first."""
    listed = candidate_lines(candidates) if candidates else "(the query returned no entities)"
    return _fill(template, question=question.strip(), query=query_text, candidates=listed)


#: UltRAG's prompts by name: ``UltRAG(..., prompts={name: template})`` replaces them.
PROMPTS: dict[str, Prompt] = {
    "query_system": Prompt(QUERY_SYSTEM, (), "System message of query generation."),
    "query": Prompt(QUERY_TEMPLATE, ("rules", "relations", "seeds", "question"),
                    "Question to logical query: {rules} is the DSL's rules, {relations} the "
                    "'P<i>: label' list, {seeds} the seed entities (may be empty); the reply "
                    "holds the query in <query> tags."),
    "arbitration_system": Prompt(ARBITRATION_SYSTEM, (), "System message of arbitration."),
    "arbitration": Prompt(ARBITRATION_TEMPLATE, ("question", "query", "candidates"),
                          "Final answers from the executor's ranked candidates ('rank. id | "
                          "name | probability' lines); answers in <answers> tags."),
}
