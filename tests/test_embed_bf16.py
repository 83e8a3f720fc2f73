"""bfloat16 bulk embedding (kgrag.embed.bf16_backend): same vectors within 1e-3 of float32,
chosen only where it is native and the input is large, checked before use."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgrag.embed import SentenceTransformerEmbedder, bf16_backend
from kgrag.embed.bf16_backend import cpu_has_native_bf16, max_cosine_error
from kgrag.errors import EmbeddingError


def metaqa_sample(n: int, seed: int = 16) -> list[str]:
    from metaqa_samples import metaqa_entity_names

    return random.Random(seed).sample(metaqa_entity_names(), n)


def bf16_embedder(minilm, **kwargs) -> SentenceTransformerEmbedder:
    embedder = SentenceTransformerEmbedder(show_progress=False, **kwargs)
    embedder._model = minilm.model  # the session's loaded PyTorch model (saves a 3 s load)
    return embedder


def float32_vectors(minilm, names: list[str]) -> np.ndarray:
    """The model's own float32 vectors (PyTorch), without touching the session embedder's
    precision state (the tests below patch the bulk size and the CPU check)."""
    return minilm.model.encode(names, batch_size=64, convert_to_numpy=True,
                               normalize_embeddings=True, show_progress_bar=False)


def test_bfloat16_vectors_within_1e_3_cosine_of_float32_on_metaqa_names(minilm):
    names = metaqa_sample(600)
    names += ["LOL", "Big Fan", "Gotcha!", "If....", "ne", "why?", "Perfect", "PERFECT",
              "Åsa Ångström — naïve café, 東京", "x", "a long title " * 30]
    embedder = bf16_embedder(minilm, precision="bfloat16")
    got = embedder.embed_documents(names)
    assert embedder.bf16_encoder is not None
    ref = float32_vectors(minilm, names)
    assert got.shape == ref.shape == (len(names), 384) and got.dtype == np.float32
    errors = 1.0 - np.sum(got * ref, axis=1)
    assert float(np.max(errors)) < bf16_backend.MAX_ERROR, names[int(np.argmax(errors))]
    assert float(np.max(errors)) > 0.0  # really bfloat16, not a float32 run
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(got[names.index("Perfect")], got[names.index("PERFECT")])
    query = embedder.embed_query("who directed Paprika")
    assert 1.0 - float(query @ minilm.embed_query("who directed Paprika")) < 1e-3


def test_auto_uses_bfloat16_only_for_bulk_input_on_a_native_cpu(minilm, monkeypatch):
    names = metaqa_sample(40, seed=3)
    monkeypatch.setattr("kgrag.embed.sentence_transformer.BULK_MIN_TEXTS", 30)
    monkeypatch.setattr(bf16_backend, "cpu_has_native_bf16", lambda: False)
    plain = bf16_embedder(minilm)
    plain.embed_documents(names)
    assert plain._bf16 is None  # emulated bfloat16 would be slower: never picked on a guess

    monkeypatch.setattr(bf16_backend, "cpu_has_native_bf16", lambda: True)
    auto = bf16_embedder(minilm)
    auto.embed_documents(names[:20])  # below the bulk size: float32
    assert auto._bf16 is None
    auto.embed_documents(names[:10] * 4)  # 40 texts but only 10 distinct: still float32
    assert auto._bf16 is None
    bulk = auto.embed_documents(names)
    assert auto._bf16 is not None
    assert max_cosine_error(float32_vectors(minilm, names), bulk) < 1e-3

    never = bf16_embedder(minilm, precision="float32")
    never.embed_documents(names)
    assert never._bf16 is None


def test_model_failing_the_check_falls_back_to_float32_or_raises_when_forced(minilm,
                                                                             monkeypatch, caplog):
    names = metaqa_sample(40, seed=5)
    monkeypatch.setattr(bf16_backend, "MAX_ERROR", 0.0)  # no bfloat16 run can meet it
    monkeypatch.setattr("kgrag.embed.sentence_transformer.BULK_MIN_TEXTS", 30)
    monkeypatch.setattr(bf16_backend, "cpu_has_native_bf16", lambda: True)
    auto = bf16_embedder(minilm)
    with caplog.at_level("WARNING", logger="kgrag.embed"):
        got = auto.embed_documents(names)
    assert auto._bf16 is None and auto._bf16_failed
    assert "bfloat16" in caplog.text and "above the 0 bound" in caplog.text
    assert max_cosine_error(float32_vectors(minilm, names), got) < 1e-5  # float32 ones

    forced = bf16_embedder(minilm, precision="bfloat16")
    with pytest.raises(EmbeddingError, match="bfloat16 unavailable"):
        forced.embed_documents(names)


def test_precision_is_validated():
    with pytest.raises(ValueError, match="precision must be one of"):
        SentenceTransformerEmbedder(precision="int8")
    with pytest.raises(ValueError, match="is the CPU path"):
        SentenceTransformerEmbedder(precision="bfloat16", device="cuda")


@pytest.mark.parametrize(("flags", "native"), [
    ("fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni", True),
    ("fpu sse2 avx2 amx_bf16 amx_tile", True),
    ("fpu sse2 avx2 avx512f avx512_vnni", False),  # AVX-512 alone: bfloat16 is emulated
])
def test_native_bfloat16_is_read_from_the_cpu_flags(tmp_path, monkeypatch, flags, native):
    monkeypatch.setattr(bf16_backend.platform, "system", lambda: "Linux")
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n")
    assert cpu_has_native_bf16.__wrapped__(str(info)) is native
    assert cpu_has_native_bf16.__wrapped__(str(tmp_path / "missing")) is False
    monkeypatch.setattr(bf16_backend.platform, "system", lambda: "Darwin")
    assert cpu_has_native_bf16.__wrapped__(str(info)) is False


def test_max_cosine_error_is_scale_free_and_exact_for_equal_rows():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 8)).astype(np.float32)
    assert max_cosine_error(a, 3.0 * a) < 1e-6
    b = a.copy()
    b[2] = -b[2]
    assert abs(max_cosine_error(a, b) - 2.0) < 1e-5
    assert max_cosine_error(a[:0], b[:0]) == 0.0
