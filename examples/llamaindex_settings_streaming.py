"""LlamaIndex: Settings, streaming, prompt overrides and instrumentation with a kgrag engine.

1. **Settings.** With ``Settings.llm`` set, the query engine needs no ``llm=`` (and
   ``Settings.embed_model`` is used the same way for embeddings).
2. **Prompts.** ``engine.get_prompts()`` lists the method's prompts as ``PromptTemplate`` s;
   ``engine.update_prompts({...})`` replaces one, and the LLM receives the new prompt.
3. **Streaming.** ``streaming=True`` returns a ``StreamingResponse``: the answer arrives piece
   by piece; the parsed answers and usage are in ``response.metadata`` once it ends.
4. **Node post-processors and instrumentation.** ``node_postprocessors`` run on the retrieved
   nodes before the answer step, as in any ``RetrieverQueryEngine``; LlamaIndex's
   instrumentation sees ``RetrievalStartEvent`` / ``RetrievalEndEvent`` and the LLM events.

Run::

    python examples/llamaindex_settings_streaming.py

Offline, a scripted stand-in plays the LLM (``scripted_llms.py``); set ``Settings.llm`` to your
own, e.g. ``OpenAI(model="gpt-4o-mini")``.
"""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path
from typing import Any

import llama_index.core.instrumentation as instrument
from llama_index.core import PromptTemplate, Settings
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.postprocessor import SimilarityPostprocessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_llms import scripted_llama

from kgrag.graph import read_triples
from llama_index_kgrag import UltRAGQueryEngine

DATA = Path(__file__).resolve().parent / "data" / "movies.tsv"
QUESTION = "Who directed the Japanese animated films?"
QUERY = '<query>AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by</query>'
ANSWER = "Both directed Japanese animated films. <answers>\nSatoshi Kon\nHayao Miyazaki\n</answers>"

ARBITRATION = PromptTemplate(
    "Question: {question}\nRanked candidates:\n{candidates}\n"
    "Name every candidate that answers it, one per line, inside <answers></answers>.")


class EventNames(BaseEventHandler):
    """Collects the class names of LlamaIndex instrumentation events."""

    names: list[str] = []  # noqa: RUF012

    @classmethod
    def class_name(cls) -> str:
        return "EventNames"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.names.append(type(event).__name__)


def main(question: str = QUESTION) -> dict:
    kg = read_triples(DATA)
    saved = Settings._llm
    llm = scripted_llama(QUERY, ANSWER)
    Settings.llm = llm  # replace with your own LLM
    events = EventNames(names=[])
    dispatcher = instrument.get_dispatcher()
    dispatcher.add_event_handler(events)
    try:
        engine = UltRAGQueryEngine.from_graph(
            kg, linking="exact", executor="symbolic", streaming=True,
            node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)])
        print(f"Prompts: {sorted(engine.get_prompts())}")
        engine.update_prompts({"arbitration": ARBITRATION})

        response = engine.query(question)
        print("Streamed answer: ", end="")
        pieces = []
        for piece in response.response_gen:
            pieces.append(piece)
            print(piece, end="", flush=True)
    finally:
        dispatcher.event_handlers.remove(events)
        Settings._llm = saved
    print(f"\nAnswers: {response.metadata['answers']} (LLM calls: "
          f"{response.metadata['usage']['calls']})")
    print("Sources: " + ", ".join(n.node.get_content() for n in response.source_nodes))
    seen = [n for n in events.names if n.startswith(("Retrieval", "LLMCompletion"))]
    runs = [f"{name} x{len(list(group))}" for name, group in groupby(seen)]
    print(f"Instrumentation events: {', '.join(runs)}")
    print("The answer prompt the LLM received:\n  " + llm.prompts[-1].replace("\n", "\n  "))
    return {"pieces": pieces, "metadata": response.metadata, "events": events.names,
            "answer_prompt": llm.prompts[-1], "sources": response.source_nodes}


if __name__ == "__main__":
    main(*sys.argv[1:2])
