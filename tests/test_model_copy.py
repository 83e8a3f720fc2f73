"""The float32 copy of a GGUF model (kgrag.llm.local.load_gguf_float32): converted once, then
read from the copy; the cache can be turned off. transformers' GGUF loading is replaced by a tiny
random Llama here (a real conversion takes ~50 s; tests/test_local_llm.py loads the real model
through the copy setup.sh writes)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kgrag.llm import local  # noqa: E402


@pytest.fixture()
def gguf_loads(monkeypatch, tmp_path):
    """transformers' from_pretrained: a GGUF file gives a tiny Llama (recorded); a folder
    loads as usual."""
    from tokenizers import Tokenizer, models

    calls = []
    real_model = transformers.AutoModelForCausalLM.from_pretrained
    real_tokenizer = transformers.AutoTokenizer.from_pretrained

    def model_from(folder, **kwargs):
        calls.append(("model", str(folder), kwargs.get("gguf_file")))
        if kwargs.get("gguf_file"):
            torch.manual_seed(0)
            return transformers.LlamaForCausalLM(transformers.LlamaConfig(
                vocab_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1))
        return real_model(folder, **kwargs)

    def tokenizer_from(folder, **kwargs):
        calls.append(("tokenizer", str(folder), kwargs.get("gguf_file")))
        if kwargs.get("gguf_file"):
            return transformers.PreTrainedTokenizerFast(
                tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
                unk_token="<unk>")
        return real_tokenizer(folder, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", model_from)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tokenizer_from)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "m.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    return folder, calls


def test_a_gguf_model_is_converted_once_then_read_from_its_copy(gguf_loads, tmp_path,
                                                                 monkeypatch):
    folder, calls = gguf_loads
    monkeypatch.setenv("KGRAG_MODEL_CACHE", str(tmp_path / "cache"))
    copy = local.float32_copy(folder, "m.gguf")
    assert copy == tmp_path / "cache" / "m-64-f32"
    first, _ = local.load_gguf_float32(folder, "m.gguf")
    assert (copy / "config.json").is_file()
    assert not list(copy.parent.glob("*.tmp*"))  # written aside, then renamed
    assert [c[2] for c in calls] == ["m.gguf", "m.gguf"]
    calls.clear()
    second, _ = local.load_gguf_float32(folder, "m.gguf")
    assert calls == [("tokenizer", str(copy), None), ("model", str(copy), None)]
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert torch.equal(a, b), name


def test_the_copy_can_be_turned_off(gguf_loads, tmp_path, monkeypatch):
    folder, calls = gguf_loads
    monkeypatch.setenv("KGRAG_MODEL_CACHE", "off")
    assert local.model_cache_root() is None and local.float32_copy(folder, "m.gguf") is None
    local.load_gguf_float32(folder, "m.gguf")
    local.load_gguf_float32(folder, "m.gguf")
    assert [c[2] for c in calls] == ["m.gguf"] * 4  # converted every time, nothing written
    monkeypatch.delenv("KGRAG_MODEL_CACHE")
    assert local.model_cache_root() == local.Path.home() / ".cache" / "kgrag" / "models"
