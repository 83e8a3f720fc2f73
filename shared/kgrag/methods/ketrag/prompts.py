"""KET-RAG's prompts (kgrag's own wording; the record format is checked by ``parsing.py``).

Extraction asks for one JSON array per line, so a strict line-by-line parser can verify every
record (``json.loads``, arity and field types) and reject the rest:

    ["entity", NAME, TYPE, DESCRIPTION]
    ["relation", SOURCE, LABEL, TARGET, STRENGTH, DESCRIPTION]
    ["done"]

Unlike GraphRAG's records, a relation carries a short LABEL, so the skeleton is a labelled
knowledge graph that any kgrag graph operation can walk.
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.llm.prompts import Prompt, template_variables

#: Marks the passage inside an extraction prompt (the fake test LLMs look for these too).
TEXT_START = "<<<TEXT"
TEXT_END = "TEXT>>>"
RECORDS_HEADER = "Records:"
GLEANING_MARKER = "Some entities or relations may be missing from the records above."
SUMMARY_MARKER = "Combine these descriptions"
ANSWER_MARKER = "Answer the question using only the data tables"

EXTRACTION_TEMPLATE = """You turn a text passage into knowledge-graph records.

Find the entities of these types that the passage mentions: {entity_types}.
Then find the relations between those entities that the passage states.

Write one record per line. Each record is a JSON array, with nothing before or after it:
["entity", "<name as written in the passage>", "<type>", "<what the passage says about it, one \
sentence>"]
["relation", "<source entity name>", "<relation label, 1-4 words>", "<target entity name>", \
<strength: integer 1-10>, "<the fact in one sentence>"]
After the last record write the line ["done"].

Every relation's source and target must also appear as entity records.

Example passage: Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903.
Example records:
["entity", "Marie Curie", "person", "Marie Curie was born in Warsaw and won the 1903 Nobel Prize \
in Physics."]
["entity", "Warsaw", "geo", "Warsaw is the city where Marie Curie was born."]
["entity", "Nobel Prize in Physics", "event", "A prize Marie Curie won in 1903."]
["relation", "Marie Curie", "born in", "Warsaw", 9, "Marie Curie was born in Warsaw."]
["relation", "Marie Curie", "won", "Nobel Prize in Physics", 9, "Marie Curie won the Nobel Prize \
in Physics in 1903."]
["done"]

{text_start}
{text}
{text_end}
{records_header}
"""

GLEANING_TEMPLATE = """{prompt}{previous}

{marker} Write only the missing records, in the same format, and end with ["done"]. If nothing is \
missing, write only ["done"].
"""

SUMMARY_TEMPLATE = """{marker} of the {kind} "{name}" into one short paragraph in the third person.
Keep every fact; if two descriptions disagree, keep both versions. Reply with the paragraph only.

Descriptions:
{descriptions}
"""

ANSWER_SYSTEM = """You answer questions from the data tables you are given: knowledge-graph \
entities and relationships, and text sources.
{marker}. Give the shortest complete answer: a word, a phrase or a short sentence.
If the tables do not contain the answer, reply exactly: Insufficient information.
Example: Question: "In which country was the Christmas Meeting of 1888 held?" Answer: Denmark"""

ANSWER_TEMPLATE = """Data tables:
{context}

Question: {question}
Answer:"""


#: The templates with kgrag's markers filled in: what a user replaces (``{text}`` etc. stay).
EXTRACTION_DEFAULT = EXTRACTION_TEMPLATE.format(
    entity_types="{entity_types}", text="{text}", text_start=TEXT_START, text_end=TEXT_END,
    records_header=RECORDS_HEADER)
GLEANING_DEFAULT = GLEANING_TEMPLATE.format(prompt="{prompt}", previous="{previous}",
                                            marker=GLEANING_MARKER)
SUMMARY_DEFAULT = SUMMARY_TEMPLATE.format(marker=SUMMARY_MARKER, kind="{kind}", name="{name}",
                                          descriptions="{descriptions}")
ANSWER_SYSTEM_DEFAULT = ANSWER_SYSTEM.format(marker=ANSWER_MARKER)

#: KET-RAG's prompts by name: ``KETRAG.from_documents(..., prompts={name: template})`` (the
#: indexing prompts) and ``KETRAG(..., prompts=...)`` / ``load(..., prompts=...)`` (answer).
PROMPTS: dict[str, Prompt] = {
    "extraction": Prompt(EXTRACTION_DEFAULT, ("entity_types", "text"),
                         "Indexing: key chunk to entity / relation records (JSON arrays, one "
                         "per line, then [\"done\"])."),
    "gleaning": Prompt(GLEANING_DEFAULT, ("prompt", "previous"),
                       "Indexing: ask for records the first extraction missed."),
    "summary": Prompt(SUMMARY_DEFAULT, ("kind", "name", "descriptions"),
                      "Indexing: merge an entity's or relation's descriptions."),
    "answer_system": Prompt(ANSWER_SYSTEM_DEFAULT, (), "System message of the answer call."),
    "answer": Prompt(ANSWER_TEMPLATE, ("context", "question"),
                     "The answer call over the retrieved data tables ({context})."),
}


def _fill(template: str, **values: str) -> str:
    used = template_variables(template)
    return template.format(**{k: v for k, v in values.items() if k in used})


def extraction_prompt(text: str, entity_types: Sequence[str], *,
                      template: str = EXTRACTION_DEFAULT) -> str:
    return _fill(template, entity_types=", ".join(entity_types), text=text)


def gleaning_prompt(prompt: str, previous_replies: Sequence[str], *,
                    template: str = GLEANING_DEFAULT) -> str:
    previous = "\n".join(r.strip() for r in previous_replies)
    return _fill(template, prompt=prompt, previous=previous)


def summary_prompt(kind: str, name: str, descriptions: Sequence[str], *,
                   template: str = SUMMARY_DEFAULT) -> str:
    listed = "\n".join(f"- {d}" for d in descriptions)
    return _fill(template, kind=kind, name=name, descriptions=listed)


def answer_system(template: str = ANSWER_SYSTEM_DEFAULT) -> str:
    return template


def answer_prompt(question: str, context: str, *, template: str = ANSWER_TEMPLATE) -> str:
    return _fill(template, context=context, question=question)
