"""Prompts of ByoKG-RAG, written for kgrag (the paper's fields and tags, our own wording).

* :func:`linker_prompt` -- the KG-Linker (paper §3.1, Fig. 3-7): one call that returns question
  entities ``<entities>``, relation paths ``<paths>``, an openCypher query ``<opencypher>`` (only
  when the store runs Cypher), draft answers ``<answers>`` and a stop signal ``<stop>``. With
  graph context it switches to the "relative" entity task (entities to explore *next*, or
  ``FINISH``), as in Fig. 4.
* :func:`relation_selection_prompt` / :func:`entity_selection_prompt` -- the two steps of agentic
  traversal (Algorithm 1, Fig. 8-9): ``<selected>`` relations and ``<next-entities>``.
* :func:`answer_prompt` -- the final KGQA call ``A = LLM(q, C)`` (the paper gives no template; we
  reuse the draft-answer task's rules and tags).

Every prompt asks for answers inside tags only; the parsers in :mod:`.parsing` accept the tag
variants the paper itself uses (``<answer>``/``<answers>``, ``<select>``/``<selected>``).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from kgrag.llm.prompts import Prompt, template_variables

#: Shown in place of the graph context before anything was retrieved.
NO_CONTEXT = "(none yet: nothing has been retrieved from the graph)"

FINISH = "FINISH"

LINKER_SYSTEM = (
    "You link questions to a knowledge graph. You write only the requested XML-style tags, one "
    "item per line inside each tag, using names exactly as they appear in the question, the "
    "schema or the graph context. You never write queries that create, change or delete data."
)

_ENTITY_TASK_FIRST = """\
## Task 1: entity extraction
List every topic entity of the question that must be found in the graph (people, places,
organisations, works, concepts, ...), one per line inside <entities> tags.
- Write each name exactly as the question writes it.
- When a mention is vague or has other common names (full name, alias, abbreviation), add those
  variants on their own lines as well.
- If the question names no entity, return empty tags: <entities></entities>"""

_ENTITY_TASK_NEXT = f"""\
## Task 1: entities to explore next
From the question and the graph context, list the entities the graph should be explored from
next, one per line inside <entities> tags, most important first.
- Leave out entities whose needed facts are already all in the graph context.
- Add aliases or full names on their own lines when a name is ambiguous.
- If the graph context already answers the question, write only {FINISH}:
  <entities>{FINISH}</entities>"""

_PATH_TASK = """\
## Task 2: relation paths
List relation paths that lead from the question's entities to the answer, one per line inside
<paths> tags. A path is one relation or several joined by " -> " (e.g. `r1 -> r2`).
- Use only relation names that appear in the schema, spelled exactly.
- Give at least three different paths when that many make sense; prefer diversity.
- With graph context, favour paths that fetch what is still missing from it.
- If no relation needs to be followed, return empty tags: <paths></paths>"""

_QUERY_TASK = """\
## Task 3: graph query
Write one complete, executable, read-only openCypher statement (MATCH ... WHERE ... RETURN ...)
that retrieves the answer, inside <opencypher> tags.
- Use only node labels, relationship types and properties from the schema.
- Express filters, aggregation and sorting the question needs in the query.
- Reuse entities and relationships found in the graph context.
- Never use CREATE, MERGE, SET, DELETE, REMOVE, DROP or CALL."""

_ANSWER_TASK = """\
## Task {n}: draft answers
Answer the question with entity names only, one per line inside <answers> tags.
- Prefer what the graph context supports over your own knowledge.
- No explanations, no lead-in sentences.
- If you cannot tell, return empty tags: <answers></answers>"""

_STOP_TASK = f"""\
## Task {{n}}: stop signal
If the graph context already contains everything needed to answer, write <stop>{FINISH}</stop>;
otherwise write <stop>CONTINUE</stop>."""


LINKER_TEMPLATE = """\
Given a question, the graph schema and the graph context retrieved so far, do the following tasks.

{tasks}

Now the input.
Question: {question}

Schema:
{schema}

Graph context:
{graph_context}
"""


def linker_prompt(
    question: str,
    schema: str,
    graph_context: str = "",
    *,
    with_query: bool = False,
    template: str = LINKER_TEMPLATE,
) -> str:
    """The KG-Linker prompt ``p(q, S, C)``; ``with_query`` adds the openCypher task.

    Without context the first-iteration entity task is used and no stop signal is requested;
    with context the "relative" entity task (Fig. 4) and the stop task are used. ``template``
    receives ``{tasks}``, ``{question}``, ``{schema}`` and ``{graph_context}``.
    """
    has_context = bool(graph_context.strip())
    return _fill(template, tasks=_linker_tasks(has_context, with_query), question=question,
                 schema=schema, graph_context=graph_context if has_context else NO_CONTEXT)


def linker_instructions(*, has_context: bool, with_query: bool = False,
                        template: str = LINKER_TEMPLATE) -> str:
    """The KG-Linker prompt's own text, without its question, schema and graph context: what
    a reply has no reason to copy (``parse_linker_reply(..., instructions=...)``)."""
    return _fill(template, tasks=_linker_tasks(has_context, with_query), question="",
                 schema="", graph_context="" if has_context else NO_CONTEXT)


def _linker_tasks(has_context: bool, with_query: bool) -> str:
    tasks = [_ENTITY_TASK_NEXT if has_context else _ENTITY_TASK_FIRST, _PATH_TASK]
    if with_query:
        tasks.append(_QUERY_TASK)
    tasks.append(_ANSWER_TASK.format(n=len(tasks) + 1))
    if has_context:
        tasks.append(_STOP_TASK.format(n=len(tasks) + 1))
    return "\n\n".join(tasks)


def _fill(template: str, **values: str) -> str:
    used = template_variables(template)
    return template.format(**{k: v for k, v in values.items() if k in used})


RELATION_SELECTION_TEMPLATE = """\
Choose the relations worth following from the given entities to answer the question.
Read the question, judge every relation in <relations>, and write the relevant ones one per line
inside <selected> tags, spelled exactly as listed. Be frugal but complete, and always select at
least one relation.

Example
<question>Who was president of the country whose main language was English in 1980?</question>
<entity>English</entity>
<relations>
language.human_language.main_country
language.human_language.iso_639_3_code
language.human_language.countries_spoken_in
</relations>
<selected>
language.human_language.main_country
language.human_language.countries_spoken_in
</selected>

Your turn.
<question>{question}</question>
<entity>{entities}</entity>
<relations>
{relations}
</relations>
Answer with the <selected></selected> tags only."""


def relation_selection_prompt(question: str, entities: Sequence[str],
                              relations: Iterable[str], *,
                              template: str = RELATION_SELECTION_TEMPLATE) -> str:
    """Algorithm 1's "Select Relations" step (Fig. 8) for the entities of one hop."""
    return _fill(template, question=question, entities="\n".join(entities),
                 relations="\n".join(relations))


ENTITY_SELECTION_TEMPLATE = """\
Given a question and the knowledge-graph facts found so far (head -> relation -> tail), choose the
entities to explore next to answer it, one per line inside <next-entities> tags, most important
first. Skip entities whose needed facts are already listed. If the facts already answer the
question, write <next-entities>FINISH</next-entities>.

Example
Question: Who was president of the country whose main language was English in 1980?
Graph context:
English -> countries_spoken_in -> England | USA
<next-entities>
England
USA
</next-entities>

Your turn.
Question: {question}
Graph context:
{graph_context}
Answer with the <next-entities></next-entities> tags only."""


def entity_selection_prompt(question: str, graph_context: str, *,
                            template: str = ENTITY_SELECTION_TEMPLATE) -> str:
    """Algorithm 1's "Select Entities" step (Fig. 9): next entities, or FINISH."""
    return _fill(template, question=question, graph_context=graph_context or NO_CONTEXT)


ANSWER_SYSTEM = (
    "You answer questions from knowledge-graph context. Put the final answers inside <answers> "
    "tags, one entity per line, with no other text inside the tags."
)


ANSWER_TEMPLATE = """\
Answer the question using the graph context below. You may reason briefly first, then give the
final answers as entity names, one per line, inside <answers> tags.
- Prefer the graph context over your own knowledge; use your own knowledge only when the context
  does not settle the question.
- Always try to give an answer; return empty tags only if you truly cannot.

Question: {question}

Graph context:
{graph_context}
"""


def answer_prompt(question: str, graph_context: str, *, template: str = ANSWER_TEMPLATE) -> str:
    """The final KGQA call ``A = LLM(q, C)``."""
    return _fill(template, question=question, graph_context=graph_context or NO_CONTEXT)


#: ByoKG-RAG's prompts by name: ``ByoKGRAG(..., prompts={name: template})`` replaces them.
PROMPTS: dict[str, Prompt] = {
    "linker_system": Prompt(LINKER_SYSTEM, (), "System message of the KG-Linker call."),
    "linker": Prompt(LINKER_TEMPLATE, ("tasks", "question", "schema", "graph_context"),
                     "The KG-Linker call: {tasks} is the task list (entities, paths, Cypher, "
                     "draft answers, stop signal) for this iteration."),
    "relation_selection": Prompt(RELATION_SELECTION_TEMPLATE,
                                 ("question", "entities", "relations"),
                                 "Agentic traversal: pick relations to follow (<selected>)."),
    "entity_selection": Prompt(ENTITY_SELECTION_TEMPLATE, ("question", "graph_context"),
                               "Agentic traversal: next entities or FINISH (<next-entities>)."),
    "answer_system": Prompt(ANSWER_SYSTEM, (), "System message of the final answer call."),
    "answer": Prompt(ANSWER_TEMPLATE, ("question", "graph_context"),
                     "The final answer call; answers inside <answers> tags."),
}
