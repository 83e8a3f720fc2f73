"""A fine-tuned writer is used with the prompt it was trained on (kgrag.finetune.use).

UltRAG and SimGRAG given :func:`method_prompts` send their query / pattern step the compact
prompt of training -- the method's one-line system message and the question -- through a real
LangChain chat model class; rendered with a chat template the way ``ChatHuggingFace`` renders
messages, that is the training template filled with the question. ``finetuned_params`` (what
``--llm local:DIR`` adds in ``kgrag ask`` / ``kgrag eval``) checks the adapter's method and
prompt version.
"""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from kgrag import KnowledgeGraph
from kgrag.errors import ConfigurationError
from kgrag.finetune import pairs as P
from kgrag.finetune.use import adapter_folder, checked_manifest, finetuned_params
from kgrag.methods.simgrag import SimGRAG
from kgrag.methods.ultrag import UltRAG

QUESTION = "what films did [Satoshi Kon] direct"


class Recording(FakeListChatModel):
    """LangChain's fake chat model, keeping the messages of every call."""

    seen: list = []

    def _call(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append([(m.type, m.content) for m in messages])
        return super()._call(messages, stop, run_manager, **kwargs)


@pytest.fixture()
def kg():
    return KnowledgeGraph.from_triples([
        ("Paprika", "directed_by", "Satoshi Kon"),
        ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
        ("Paprika", "has_genre", "Animation"),
    ])


def test_ultrag_sends_the_compact_training_prompt(kg):
    chat = Recording(responses=['"Satoshi Kon" -> directed_by_inv'], seen=[])
    method = UltRAG(kg, llm=chat, linking="exact", arbitrator="margin",
                    prompts=P.method_prompts("ultrag"))
    result = method.retrieve(QUESTION)
    assert {e.name for e in result.items[:2]} == {"Paprika", "Tokyo Godfathers"}
    assert chat.seen == [[("system", P.SYSTEM["ultrag"]), ("human", QUESTION)]]


def test_simgrag_sends_the_compact_training_prompt_and_reads_the_trained_target(kg, minilm):
    from kgrag.eval.datasets import QAExample, metaqa_relation_path

    ex = QAExample(QUESTION, ("Paprika",), ("Satoshi Kon",),
                   metaqa_relation_path("director_to_movie"), "director_to_movie", id="x")
    (pair,) = P.oracle_pairs("simgrag", [ex], "d")
    chat = Recording(responses=[pair.target], seen=[])
    method = SimGRAG(kg, llm=chat, embedder=minilm, prompts=P.method_prompts("simgrag"))
    result = method.retrieve(QUESTION)
    assert chat.seen == [[("system", P.SYSTEM["simgrag"]), ("human", QUESTION)]]
    assert result.metadata["pattern"] == [list(t) for t in P.parse_pattern(pair.target)]
    mapped = {n for sub in result.items for n in sub.metadata["mapping"].values()}
    assert {"Paprika", "Tokyo Godfathers"} <= mapped
    # without the override SimGRAG keeps its few-shot prompt and no system message
    chat = Recording(responses=[pair.target], seen=[])
    SimGRAG(kg, llm=chat, embedder=minilm).retrieve(QUESTION)
    [[(kind, text)]] = chat.seen
    assert kind == "human" and len(text) > 10 * len(QUESTION)


def test_the_chat_rendering_of_the_compact_prompt_is_the_training_template():
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models

    from kgrag.finetune.model import prompt_template

    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
        unk_token="<unk>")
    tokenizer.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n"
                               "{% endfor %}{% if add_generation_prompt %}<|assistant|>"
                               "{% endif %}")
    for method in ("ultrag", "simgrag"):
        prompts = P.method_prompts(method)
        system = next(v for k, v in prompts.items() if k.endswith("_system"))
        user = next(v for k, v in prompts.items() if not k.endswith("_system"))
        # what ChatHuggingFace renders for [SystemMessage, HumanMessage]
        rendered = tokenizer.apply_chat_template(
            [{"role": "system", "content": system},
             {"role": "user", "content": user.format(question=QUESTION)}],
            tokenize=False, add_generation_prompt=True)
        trained = prompt_template(tokenizer, P.SYSTEM[method]).format(
            question=P.compact_prompt(method, QUESTION))
        assert rendered == trained


def _adapter(tmp_path, method="ultrag", version=None):
    folder = tmp_path / f"adapter-{method}"
    folder.mkdir()
    (folder / "kgrag_finetune.json").write_text(json.dumps({
        "method": method, "prompt_version": version or P.PROMPT_VERSIONS[method],
        "prompt_template": "{question}", "base": "local:smollm2-135m"}))
    return folder


def test_finetuned_params_follow_the_adapters_manifest(tmp_path):
    folder = _adapter(tmp_path)
    assert adapter_folder(f"local:{folder}?max_new_tokens=48") == folder
    assert finetuned_params(f"local:{folder}?max_new_tokens=48", "ultrag") == {
        "prompts": P.method_prompts("ultrag")}
    # not an adapter: nothing to add
    assert finetuned_params(None, "ultrag") == {}
    assert finetuned_params("local:smollm2-135m", "ultrag") == {}
    assert finetuned_params("mymodels:chat", "ultrag") == {}
    assert finetuned_params(f"local:{tmp_path}", "ultrag") == {}
    with pytest.raises(ConfigurationError, match="fine-tuned for ultrag's LLM step"):
        finetuned_params(f"local:{folder}", "simgrag")
    old = _adapter(tmp_path, "simgrag", version=1)
    with pytest.raises(ConfigurationError, match="version 1"):
        checked_manifest(old, "simgrag")
    with pytest.raises(ValueError, match="scores candidate"):
        P.method_prompts("graphraft")
