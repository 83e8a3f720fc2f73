"""SimGRAG's two prompts (query -> pattern, evidence graphs -> answer) and the evidence format.

Written for kgrag (the paper's prompts are paraphrased in notes §1.2 / §1.7, not copied). The
paper hand-writes 12 few-shot examples per knowledge graph; the defaults here are generic
examples, and both example lists can be replaced per graph (``pattern_examples=`` /
``answer_examples=`` on :class:`~kgrag.methods.simgrag.pipeline.SimGRAG`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kgrag.llm.parsing import MAX_REPLY_CHARS
from kgrag.llm.prompts import Prompt, template_variables

PATTERN_INSTRUCTIONS = """\
Rewrite the query as a small knowledge-graph pattern.
First split the query into short segments, then write the facts the segments talk about as
(head, relation, tail) triples.

Rules:
1. Keep the query's own wording and enough context in every entity and relation. Never use
   vague relations such as "in", "of", "for", "is", "have", "appear in".
2. An entity or relation the query does not name is written with the keyword UNKNOWN, a type
   and a number that is unique in the pattern, e.g. "UNKNOWN person 1", "UNKNOWN film 2",
   "UNKNOWN relation 1". Reuse the same placeholder when the query refers to the same thing.
3. Prefer the active voice; split a relation between two named things that goes through a third
   thing (such as "co-starred with") into two triples through an UNKNOWN node.
4. Reply with exactly one object and nothing else:
   {"divided": ["segment 1", ...], "triples": [("head", "relation", "tail"), ...]}"""

#: (query, reply) pairs: generic examples over films, people, places and organisations.
DEFAULT_PATTERN_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Who directed Tokyo Godfathers?",
     '{"divided": ["who directed Tokyo Godfathers"], '
     '"triples": [("Tokyo Godfathers", "directed by", "UNKNOWN person 1")]}'),
    ("Which films did the director of Paprika also direct?",
     '{"divided": ["the director of Paprika", "films this director also directed"], '
     '"triples": [("Paprika", "directed by", "UNKNOWN person 1"), '
     '("UNKNOWN film 1", "directed by", "UNKNOWN person 1")]}'),
    ("What languages are the films starring Meryl Streep in?",
     '{"divided": ["films starring Meryl Streep", "the languages of these films"], '
     '"triples": [("UNKNOWN film 1", "starring", "Meryl Streep"), '
     '("UNKNOWN film 1", "language", "UNKNOWN language 1")]}'),
    ("Who wrote the films that share actors with Heat?",
     '{"divided": ["actors of Heat", "other films with these actors", "writers of those films"], '
     '"triples": [("Heat", "starring", "UNKNOWN actor 1"), '
     '("UNKNOWN film 1", "starring", "UNKNOWN actor 1"), '
     '("UNKNOWN film 1", "written by", "UNKNOWN person 1")]}'),
    ("When was Casablanca released?",
     '{"divided": ["the release year of Casablanca"], '
     '"triples": [("Casablanca", "release year", "UNKNOWN year 1")]}'),
    ("Where was the wife of Charles Darwin born?",
     '{"divided": ["the wife of Charles Darwin", "where she was born"], '
     '"triples": [("Charles Darwin", "spouse", "UNKNOWN person 1"), '
     '("UNKNOWN person 1", "place of birth", "UNKNOWN place 1")]}'),
    ("What is the nationality of the father of Ada Lovelace?",
     '{"divided": ["the father of Ada Lovelace", "his nationality"], '
     '"triples": [("Ada Lovelace", "father", "UNKNOWN person 1"), '
     '("UNKNOWN person 1", "nationality", "UNKNOWN country 1")]}'),
    ("Marie Curie was born in Warsaw and worked at the University of Paris.",
     '{"divided": ["Marie Curie was born in Warsaw", "she worked at the University of Paris"], '
     '"triples": [("Marie Curie", "place of birth", "Warsaw"), '
     '("Marie Curie", "employer", "University of Paris")]}'),
    ("How is Lisbon related to Portugal?",
     '{"divided": ["the relation between Lisbon and Portugal"], '
     '"triples": [("Lisbon", "UNKNOWN relation 1", "Portugal")]}'),
    ("The building designed by Thomas Jefferson is located in Virginia and has a Neoclassical "
     "style.",
     '{"divided": ["a building designed by Thomas Jefferson", "it is located in Virginia", '
     '"it has a Neoclassical style"], '
     '"triples": [("UNKNOWN building 1", "architect", "Thomas Jefferson"), '
     '("UNKNOWN building 1", "located in", "Virginia"), '
     '("UNKNOWN building 1", "architectural style", "Neoclassical architecture")]}'),
    ("Which company founded by Steve Jobs is headquartered in Cupertino?",
     '{"divided": ["a company founded by Steve Jobs", "it is headquartered in Cupertino"], '
     '"triples": [("UNKNOWN company 1", "founded by", "Steve Jobs"), '
     '("UNKNOWN company 1", "headquarters", "Cupertino")]}'),
    ("Which genres do the films written by the screenwriter of Se7en belong to?",
     '{"divided": ["the screenwriter of Se7en", "films written by this screenwriter", '
     '"the genres of those films"], '
     '"triples": [("Se7en", "written by", "UNKNOWN person 1"), '
     '("UNKNOWN film 1", "written by", "UNKNOWN person 1"), '
     '("UNKNOWN film 1", "genre", "UNKNOWN genre 1")]}'),
)

QA_ANSWER_INSTRUCTIONS = """\
Answer the question using the evidence graphs retrieved from a knowledge graph.

Rules:
1. Copy answer names exactly as they are written in the evidence; never rephrase them.
2. Different graphs may support different answers: give every answer that fits the question,
   leaving out graphs that clearly do not fit it.
3. Give a short reason first. End with one line "Answer: " followed by the answers separated
   by " | "."""

FACT_ANSWER_INSTRUCTIONS = """\
Decide whether the claim is supported by the evidence graphs retrieved from a knowledge graph.

Rules:
1. The claim is True when some evidence graph fully supports it, otherwise False.
2. A general statement ("A has a spouse") is supported by any specific fact of that kind.
3. Relations are not interchangeable: "builder" is not "owner", "manager" is not "leader".
4. If there is no evidence, decide from common sense; never ask for more evidence.
5. Give a short reason first. End with one line "Answer: True" or "Answer: False"."""

#: (question, evidence, reply) triples for the question-answering prompt.
DEFAULT_QA_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("Who directed Tokyo Godfathers?",
     'graph [1]: [("Tokyo Godfathers", "directed_by", "Satoshi Kon")]\n'
     'graph [2]: [("Tokyo Godfathers", "written_by", "Keiko Nobumoto")]',
     "Graph [1] says Tokyo Godfathers was directed by Satoshi Kon; graph [2] is about the "
     "writer, not the director.\nAnswer: Satoshi Kon"),
    ("Which films did the director of Paprika also direct?",
     'graph [1]: [("Paprika", "directed_by", "Satoshi Kon"), '
     '("Tokyo Godfathers", "directed_by", "Satoshi Kon")]\n'
     'graph [2]: [("Paprika", "directed_by", "Satoshi Kon"), '
     '("Perfect Blue", "directed_by", "Satoshi Kon")]',
     "Graphs [1] and [2] show Satoshi Kon directed Paprika and also Tokyo Godfathers and "
     "Perfect Blue.\nAnswer: Tokyo Godfathers | Perfect Blue"),
    ("Where was the wife of Charles Darwin born?",
     'graph [1]: [("Charles Darwin", "spouse", "Emma Darwin"), '
     '("Emma Darwin", "place_of_birth", "Maer")]',
     "Graph [1]: Charles Darwin's spouse Emma Darwin was born in Maer.\nAnswer: Maer"),
)

DEFAULT_FACT_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("Marie Curie was born in Warsaw.",
     'graph [1]: [("Marie Curie", "birthPlace", "Warsaw")]',
     "Graph [1] states Marie Curie's birth place is Warsaw.\nAnswer: True"),
    ("Alan B. Miller Hall is owned by the University of Virginia.",
     'graph [1]: [("Alan B. Miller Hall", "owner", "College of William and Mary")]',
     "Graph [1] gives a different owner, the College of William and Mary.\nAnswer: False"),
    ("Ada Lovelace had a child.",
     'graph [1]: [("Ada Lovelace", "child", "Byron King-Noel")]',
     "Graph [1] shows a child of Ada Lovelace, which supports the claim.\nAnswer: True"),
)


def _literal(text: str) -> str:
    """``text`` inside a ``str.format`` template: braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


#: The query-to-pattern template; ``{examples}`` is the rendered few-shot list.
PATTERN_TEMPLATE = (_literal(PATTERN_INSTRUCTIONS)
                    + "\n\n{examples}\n\nYour task) query: {question}\n")
#: The evidence-to-answer templates (question answering, fact verification).
QA_ANSWER_TEMPLATE = (_literal(QA_ANSWER_INSTRUCTIONS) + "\n\n{examples}\n\nYour task) question: "
                      "{question}\nevidence:\n{evidence}\nreply:")
FACT_ANSWER_TEMPLATE = (_literal(FACT_ANSWER_INSTRUCTIONS) + "\n\n{examples}\n\nYour task) claim: "
                        "{question}\nevidence:\n{evidence}\nreply:")


def _fill(template: str, **values: str) -> str:
    used = template_variables(template)
    return template.format(**{k: v for k, v in values.items() if k in used})


def pattern_prompt(question: str, examples: Sequence[tuple[str, str]] = DEFAULT_PATTERN_EXAMPLES,
                   *, template: str = PATTERN_TEMPLATE) -> str:
    """The query-to-pattern prompt for ``question`` with the given (query, reply) examples."""
    shots = "\n\n".join(f"Example {i}) query: {q}\n{a}" for i, (q, a) in enumerate(examples, 1))
    return _fill(template, examples=shots, question=question)


def verbalize_graphs(subgraphs: Sequence[Sequence[tuple[str, str, str]]]) -> str:
    """``graph [1]: [("h", "r", "t"), ...]`` lines, one per subgraph, in the order given."""
    lines = []
    for i, triples in enumerate(subgraphs, 1):
        inner = ", ".join("(" + ", ".join(_quote(x) for x in t) + ")" for t in triples)
        lines.append(f"graph [{i}]: [{inner}]")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def answer_prompt(question: str, evidence: str, *, task: str = "qa",
                  examples: Sequence[tuple[str, str, str]] | None = None,
                  template: str | None = None) -> str:
    """The evidence-to-answer prompt; ``task`` is ``"qa"`` or ``"fact"`` (fact verification)."""
    if task not in ("qa", "fact"):
        raise ValueError("task must be 'qa' or 'fact'")
    if template is None:
        template = QA_ANSWER_TEMPLATE if task == "qa" else FACT_ANSWER_TEMPLATE
    if examples is None:
        examples = DEFAULT_QA_EXAMPLES if task == "qa" else DEFAULT_FACT_EXAMPLES
    label = "question" if task == "qa" else "claim"
    shots = "\n\n".join(f"Example {i}) {label}: {q}\nevidence:\n{e}\nreply: {a}"
                        for i, (q, e, a) in enumerate(examples, 1))
    return _fill(template, examples=shots, question=question,
                 evidence=evidence or "(no evidence found)")


#: SimGRAG's prompts by name: ``SimGRAG(..., prompts={name: template})`` replaces them.
PROMPTS: dict[str, Prompt] = {
    "pattern_system": Prompt("", (), "System message of the pattern request (none by default; "
                             "a fine-tuned pattern writer's compact prompt sets one)."),
    "pattern": Prompt(PATTERN_TEMPLATE, ("examples", "question"),
                      "Query to pattern graph; the reply is one {\"divided\", \"triples\"} object. "
                      "{examples} is the rendered few-shot list (see example packs)."),
    "answer": Prompt(QA_ANSWER_TEMPLATE, ("examples", "question", "evidence"),
                     "Evidence graphs to answer (task 'qa'); ends with 'Answer: a | b'."),
    "verify": Prompt(FACT_ANSWER_TEMPLATE, ("examples", "question", "evidence"),
                     "Evidence graphs to True/False (task 'fact'); ends with 'Answer: True'."),
}


def _answer_rest(line: str) -> str | None:
    """What follows ``Answer:`` on ``line`` (``**Answer**:``, ``answer ：``...), else ``None``.

    String operations instead of the regex ``\\s*\\**\\s*answer...``, whose two adjacent
    ``\\s*`` backtracked quadratically on a long run of spaces (a 40 kB reply took 8 s).
    """
    rest = line.lstrip().lstrip("*").lstrip()
    if rest[:6].lower() != "answer":
        return None
    rest = rest[6:].lstrip().lstrip("*").lstrip()
    return rest[1:] if rest[:1] in (":", "：") else None


def parse_answers(reply: str, *, task: str = "qa") -> list[str]:
    """The answers on the reply's last ``Answer:`` line ([] when there is none).

    For ``task="fact"`` the result is ``["True"]``, ``["False"]`` or [] when neither is stated.
    """
    line = None
    for raw in (reply or "")[:MAX_REPLY_CHARS].split("\n"):
        rest = _answer_rest(raw)
        if rest is not None:
            line = rest
    if line is None:
        return []
    line = line.strip()
    if task == "fact":
        words = set(re.findall(r"\b(true|false)\b", line.lower()))
        return [words.pop().capitalize()] if len(words) == 1 else []
    seen: dict[str, None] = {}
    for part in line.split("|"):
        item = part.strip().strip('"').strip("'").strip().rstrip(".").strip()
        if item:
            seen.setdefault(item)
    return list(seen)
