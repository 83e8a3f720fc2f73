"""Every method's prompts are named plain templates the user can replace with one parameter,
as strings or as LangChain / LlamaIndex prompt templates; SimGRAG has per-dataset packs."""

from __future__ import annotations

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from llama_index.core import PromptTemplate as LIPromptTemplate
from llm_fakes import ScriptedLlamaLLM

from kgrag import KnowledgeGraph
from kgrag.llm.prompts import Prompt, PromptSet
from kgrag.methods.byokg import ByoKGRAG
from kgrag.methods.byokg.prompts import PROMPTS as BYOKG_PROMPTS
from kgrag.methods.graphraft.prompts import PROMPTS as GRAPHRAFT_PROMPTS
from kgrag.methods.ketrag.prompts import PROMPTS as KETRAG_PROMPTS
from kgrag.methods.simgrag import SimGRAG
from kgrag.methods.simgrag.examples import PACKS
from kgrag.methods.simgrag.prompts import PROMPTS as SIMGRAG_PROMPTS
from kgrag.methods.ultrag import UltRAG
from kgrag.methods.ultrag.prompts import PROMPTS as ULTRAG_PROMPTS

TRIPLES = [("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
           ("Paprika", "directed_by", "Satoshi Kon"), ("Paprika", "release_year", "2006")]
QUERY = '"Satoshi Kon" -> directed_by_inv'


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_triples(TRIPLES)


@pytest.mark.parametrize("defaults", [BYOKG_PROMPTS, SIMGRAG_PROMPTS, ULTRAG_PROMPTS,
                                      KETRAG_PROMPTS, GRAPHRAFT_PROMPTS])
def test_every_default_is_a_plain_template_of_its_declared_variables(defaults):
    prompts = PromptSet(defaults)
    for name, prompt in defaults.items():
        assert isinstance(prompt, Prompt) and prompt.description
        filled = prompts.format(name, **{v: f"<{v}>" for v in prompt.variables})
        for variable in prompt.variables:
            assert f"<{variable}>" in filled, (name, variable)


def test_unknown_names_and_variables_fail_at_construction(kg):
    with pytest.raises(ValueError, match="its prompts are: arbitration, arbitration_system"):
        UltRAG(kg, linking="exact", prompts={"answr": "x"})
    with pytest.raises(ValueError, match=r"cannot use \{context\}; its variables are: "
                                         r"\{question\}, \{query\}, \{candidates\}"):
        UltRAG(kg, linking="exact", prompts={"arbitration": "{question} {context}"})
    with pytest.raises(ValueError, match="double literal braces"):
        UltRAG(kg, linking="exact", prompts={"query": "JSON like {'a': 1}"})


def test_langchain_chat_prompt_template_replaces_prompt_and_system(kg):
    chat = ChatPromptTemplate.from_messages([
        ("system", "You write DSL queries."),
        ("human", "Relations:\n{relations}\nQ: {question}\nOnly the query."),
    ])
    seen = []

    class Recording(FakeListChatModel):
        def _call(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append([(m.type, m.content) for m in messages])
            return super()._call(messages, stop, run_manager, **kwargs)

    method = UltRAG(kg, llm=Recording(responses=[QUERY]), linking="exact",
                    prompts={"query": chat,
                             "arbitration":
                                 PromptTemplate.from_template("{question}|{candidates}")})
    result = method.retrieve("Which films did Satoshi Kon direct?")
    assert {e.name for e in result.items[:2]} == {"Tokyo Godfathers", "Paprika"}
    [(system, prompt)] = seen
    assert system == ("system", "You write DSL queries.")
    assert prompt[1].startswith("Relations:\nP0: directed_by") and prompt[1].endswith(
        "Q: Which films did Satoshi Kon direct?\nOnly the query.")
    assert method.prompts.template("arbitration") == "{question}|{candidates}"
    assert method.prompts.describe()["query_system"]["replaced"]


def test_llamaindex_prompt_template_replaces_byokg_answer(kg):
    llm = ScriptedLlamaLLM(replies=[
        "<entities>\nPaprika\n</entities>\n<paths>\ndirected_by\n</paths>\n<answers></answers>",
        "<answers>Satoshi Kon</answers>"], prompts=[])
    method = ByoKGRAG(kg, llm=llm, embedder=_TinyEmbedder(), linking_mode="fuzzy",
                      iterations=1, triplet_retrieval="scoring", text_top_k=0, prompts={
                          "answer":
                              LIPromptTemplate("FACTS\n{graph_context}\nQUESTION {question}")})
    answer = method.answer("Who directed Paprika?")
    assert answer.answers == ["Satoshi Kon"]
    # the linker prompt is still the default; the answer call got the user's template
    assert llm.prompts[0].startswith(BYOKG_PROMPTS["linker_system"].template)
    assert llm.prompts[1].startswith(BYOKG_PROMPTS["answer_system"].template + "\n\nFACTS\n")
    assert "Paprika -> directed_by -> Satoshi Kon" in llm.prompts[1]
    assert llm.prompts[1].endswith("QUESTION Who directed Paprika?")


def test_simgrag_example_packs_and_pattern_override(kg):
    assert set(PACKS) == {"generic", "metaqa", "pathquestion", "factkg"}
    metaqa = SimGRAG(kg, examples="metaqa", embedder=_TinyEmbedder())
    prompt = metaqa.pattern_prompt("who directed Paprika")
    assert "what films did Hayao Miyazaki direct" in prompt
    assert prompt.endswith("Your task) query: who directed Paprika\n")
    fact = SimGRAG(kg, examples="factkg", embedder=_TinyEmbedder())
    assert fact.config.task == "fact" and "Alan Bean" in fact.pattern_prompt("x")
    assert SimGRAG(kg, examples="metaqa", pattern_examples=[("q", "r")],
                   embedder=_TinyEmbedder()).pattern_examples == [
        ("q", "r")]
    with pytest.raises(ValueError, match="packs: generic, metaqa"):
        SimGRAG(kg, examples="wikidata", embedder=_TinyEmbedder())
    custom = SimGRAG(kg, embedder=_TinyEmbedder(), prompts={"pattern": "Pattern for {question}. "
                                                                       "{{\"triples\": []}}"})
    assert custom.pattern_prompt("Q?") == 'Pattern for Q?. {"triples": []}'


def test_ketrag_and_graphraft_take_prompts(kg):
    from kgrag.methods.graphraft.pipeline import GraphRAFT
    from kgrag.methods.ketrag import KETRAG

    assert GraphRAFT(kg, embedder=_TinyEmbedder(), prompts={
        "answer": "{question}::{info}"}).prompts.template("answer") == "{question}::{info}"
    with pytest.raises(ValueError, match="KET-RAG has no prompt 'extract'"):
        KETRAG.from_documents(["a text"], embedder=_TinyEmbedder(), budget=0, progress=False,
                              prompts={"extract": "{text}"})


class _TinyEmbedder:
    """A deterministic 8-d embedder (prompt tests need no model)."""

    dimension = 8

    def embed_query(self, text):
        return self.embed_documents([text])[0]

    def embed_documents(self, texts):
        return [[(hash(t) >> i & 1) * 1.0 + 0.1 for i in range(8)] for t in texts]
