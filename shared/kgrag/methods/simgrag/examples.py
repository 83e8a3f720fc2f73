"""Per-dataset few-shot example packs for SimGRAG's two prompts.

The paper writes a dozen examples per knowledge graph: a pattern written in the graph's own
vocabulary is what lets vector search find the right relations. A pack bundles the
query-to-pattern examples, the answer examples and the answer task; pick one with
``SimGRAG(kg, examples="metaqa")`` (explicit ``pattern_examples=`` / ``answer_examples=`` still
win), or pass your own :class:`ExamplePack`. All examples are written for kgrag.

=============  ==============================================================================
pack           for
=============  ==============================================================================
generic        any graph (films, people, places, organisations); the default
metaqa         MetaQA's movie graph (director, writer, starring, genre, language, year, tag)
pathquestion   PathQuestion's Freebase family/people graph (parents, children, spouse, ...)
factkg         fact verification over DBpedia-style claims (task ``"fact"``: True / False)
=============  ==============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

from kgrag.methods.simgrag.prompts import (
    DEFAULT_FACT_EXAMPLES,
    DEFAULT_PATTERN_EXAMPLES,
    DEFAULT_QA_EXAMPLES,
)


@dataclass(frozen=True)
class ExamplePack:
    """Few-shot examples for one kind of graph: (query, reply) pattern examples and
    (question, evidence, reply) answer examples, for the answer ``task`` ("qa" or "fact")."""

    name: str
    pattern_examples: tuple[tuple[str, str], ...]
    answer_examples: tuple[tuple[str, str, str], ...]
    task: str = "qa"
    description: str = ""


def _pattern(divided: list[str], triples: list[tuple[str, str, str]]) -> str:
    """A reply in the format the pattern prompt asks for."""
    inner = ", ".join("(" + ", ".join(f'"{x}"' for x in t) + ")" for t in triples)
    segments = ", ".join(f'"{d}"' for d in divided)
    return f'{{"divided": [{segments}], "triples": [{inner}]}}'


METAQA = ExamplePack(
    "metaqa",
    (
        ("what films did Hayao Miyazaki direct",
         _pattern(["films directed by Hayao Miyazaki"],
                  [("UNKNOWN movie 1", "director", "Hayao Miyazaki")])),
        ("who wrote the screenplay for Spirited Away",
         _pattern(["the writer of Spirited Away"],
                  [("Spirited Away", "writer", "UNKNOWN person 1")])),
        ("which actors starred in films directed by Satoshi Kon",
         _pattern(["films directed by Satoshi Kon", "actors starring in those films"],
                  [("UNKNOWN movie 1", "director", "Satoshi Kon"),
                   ("UNKNOWN movie 1", "starring", "UNKNOWN actor 1")])),
        ("what genres are the films written by the writer of Paprika",
         _pattern(["the writer of Paprika", "films written by that writer",
                   "the genres of those films"],
                  [("Paprika", "writer", "UNKNOWN person 1"),
                   ("UNKNOWN movie 1", "writer", "UNKNOWN person 1"),
                   ("UNKNOWN movie 1", "genre", "UNKNOWN genre 1")])),
        ("when were the movies starring Meg Ryan released",
         _pattern(["movies starring Meg Ryan", "their release years"],
                  [("UNKNOWN movie 1", "starring", "Meg Ryan"),
                   ("UNKNOWN movie 1", "release year", "UNKNOWN year 1")])),
        ("what languages are spoken in the films that share directors with Heat",
         _pattern(["the director of Heat", "other films of that director",
                   "the language of those films"],
                  [("Heat", "director", "UNKNOWN person 1"),
                   ("UNKNOWN movie 1", "director", "UNKNOWN person 1"),
                   ("UNKNOWN movie 1", "language", "UNKNOWN language 1")])),
        ("what are the tags of Tokyo Godfathers",
         _pattern(["the tags of Tokyo Godfathers"],
                  [("Tokyo Godfathers", "tag", "UNKNOWN tag 1")])),
    ),
    (
        ("what films did Satoshi Kon direct",
         'graph [1]: [("Paprika", "directed_by", "Satoshi Kon")]\n'
         'graph [2]: [("Perfect Blue", "directed_by", "Satoshi Kon")]\n'
         'graph [3]: [("Paprika", "written_by", "Satoshi Kon")]',
         "Graphs [1] and [2] are films Satoshi Kon directed; graph [3] is about writing.\n"
         "Answer: Paprika | Perfect Blue"),
        ("who starred in the films written by Seishi Minakami",
         'graph [1]: [("Paprika", "written_by", "Seishi Minakami"), '
         '("Paprika", "starred_actors", "Megumi Hayashibara")]',
         "Graph [1]: Seishi Minakami wrote Paprika, which stars Megumi Hayashibara.\n"
         "Answer: Megumi Hayashibara"),
    ),
    description="MetaQA movie graph (WikiMovies KB relations)",
)

PATHQUESTION = ExamplePack(
    "pathquestion",
    (
        ("which nationality is ernest_augustus 's couple ?",
         _pattern(["the spouse of ernest_augustus", "the nationality of that spouse"],
                  [("ernest_augustus", "spouse", "UNKNOWN person 1"),
                   ("UNKNOWN person 1", "nationality", "UNKNOWN country 1")])),
        ("the parent of anna_of_saxony 's son ?",
         _pattern(["the son of anna_of_saxony", "the parent of that son"],
                  [("anna_of_saxony", "children", "UNKNOWN person 1"),
                   ("UNKNOWN person 1", "parents", "UNKNOWN person 2")])),
        ("what is the profession of the father of maximilian_of_bavaria ?",
         _pattern(["the father of maximilian_of_bavaria", "the profession of that father"],
                  [("maximilian_of_bavaria", "parents", "UNKNOWN person 1"),
                   ("UNKNOWN person 1", "profession", "UNKNOWN profession 1")])),
        ("where did the spouse of joan_crawford die ?",
         _pattern(["the spouse of joan_crawford", "the place of death of that spouse"],
                  [("joan_crawford", "spouse", "UNKNOWN person 1"),
                   ("UNKNOWN person 1", "place_of_death", "UNKNOWN place 1")])),
        ("what is the religion of the daughter of the king of ruritania 's wife ?",
         _pattern(["the wife of the king of ruritania", "her daughter", "the daughter's religion"],
                  [("king_of_ruritania", "spouse", "UNKNOWN person 1"),
                   ("UNKNOWN person 1", "children", "UNKNOWN person 2"),
                   ("UNKNOWN person 2", "religion", "UNKNOWN religion 1")])),
    ),
    (
        ("which nationality is ernest_augustus 's couple ?",
         'graph [1]: [("ernest_augustus", "spouse", "frederica_of_mecklenburg"), '
         '("frederica_of_mecklenburg", "nationality", "germany")]',
         "Graph [1]: ernest_augustus's spouse is frederica_of_mecklenburg, of Germany.\n"
         "Answer: germany"),
    ),
    description="PathQuestion (Freebase people: parents, children, spouse, nationality, ...)",
)

FACTKG = ExamplePack(
    "factkg",
    (
        ("Alan Bean was born in Wheeler, Texas.",
         _pattern(["Alan Bean was born in Wheeler, Texas"],
                  [("Alan Bean", "birth place", "Wheeler, Texas")])),
        ("The architect of the Alan B. Miller Hall is Robert A. M. Stern.",
         _pattern(["the architect of Alan B. Miller Hall is Robert A. M. Stern"],
                  [("Alan B. Miller Hall", "architect", "Robert A. M. Stern")])),
        ("A person who studied at Stanford founded a company headquartered in Mountain View.",
         _pattern(["a person studied at Stanford", "the person founded a company",
                   "the company is headquartered in Mountain View"],
                  [("UNKNOWN person 1", "alma mater", "Stanford University"),
                   ("UNKNOWN company 1", "founder", "UNKNOWN person 1"),
                   ("UNKNOWN company 1", "headquarter", "Mountain View")])),
        ("Aarhus Airport serves a city whose leader is Jacob Bundsgaard.",
         _pattern(["Aarhus Airport serves a city", "the city's leader is Jacob Bundsgaard"],
                  [("Aarhus Airport", "city served", "UNKNOWN city 1"),
                   ("UNKNOWN city 1", "leader name", "Jacob Bundsgaard")])),
        ("Ada Lovelace had a child.",
         _pattern(["Ada Lovelace had a child"],
                  [("Ada Lovelace", "child", "UNKNOWN person 1")])),
    ),
    DEFAULT_FACT_EXAMPLES,
    task="fact",
    description="fact verification over DBpedia-style claims (FactKG)",
)

GENERIC = ExamplePack("generic", DEFAULT_PATTERN_EXAMPLES, DEFAULT_QA_EXAMPLES,
                      description="any graph: films, people, places, organisations")

PACKS: dict[str, ExamplePack] = {p.name: p for p in (GENERIC, METAQA, PATHQUESTION, FACTKG)}


def example_pack(pack: str | ExamplePack) -> ExamplePack:
    """The pack named ``pack`` (or ``pack`` itself); ``ValueError`` lists the names."""
    if isinstance(pack, ExamplePack):
        return pack
    try:
        return PACKS[pack]
    except KeyError:
        raise ValueError(f"no SimGRAG example pack {pack!r}; packs: {', '.join(PACKS)}") from None
