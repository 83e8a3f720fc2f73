"""Name-embedding throughput: the previous PyTorch path against today's default (ONNX Runtime,
length-sorted, deduplicated batches) with the same packaged all-MiniLM-L6-v2.

Not a test: prints a table and writes ``benchmarks/results/embed_throughput.json``. Run from the
repo root (long runs under ``flock /work/bench.lock`` on the shared machine)::

    python benchmarks/embed_throughput.py                        # MetaQA's 43k names + 1M synthetic
    python benchmarks/embed_throughput.py --synthetic 0          # MetaQA only (a few minutes)
    python benchmarks/embed_throughput.py --synthetic 0 --threads 2 --no-int8   # issue 26's run

Names: MetaQA's 43,234 real entity names (``../shared/data/metaqa``) and synthetic names made by
recombining their words (2-4 words, as in ``bench_linking.py``). Paths, each with 1 and 2 threads:

- ``previous``: what ``SentenceTransformerEmbedder.embed_documents`` did before (PyTorch,
  ``model.encode`` over chunks of 512 texts in input order, batch size 64);
- ``torch``: today's PyTorch fallback (``backend="torch"``: each distinct text once, shortest
  first);
- ``onnx``: today's default for small inputs when ``onnxruntime`` is installed
  (``backend="onnx"``, float32);
- ``bf16``: today's default for a graph's names (``precision="auto"`` from 20,000 distinct
  texts up) on CPUs with native bfloat16 (AVX512-BF16 / AMX): PyTorch with bfloat16 matrix
  products (``kgrag.embed.bf16_backend``), timed on the sample and the whole list;
- ``onnx-int8`` (rejected, for reference): the same export through
  ``onnxruntime.quantization.quantize_dynamic`` (weight MatMuls only, per-channel QInt8), timed on
  the sample: faster, but its vectors miss the 1e-3 cosine bound (see
  docs/benchmarks-linking.md).

Every path is timed on a sample (``--previous-sample`` names) of each list; ``onnx`` and ``bf16``
also on the whole list (``onnx`` on synthetic lists only up to ``--full-onnx-max`` names).
Agreement: the largest ``1 - cosine`` between each path's and ``previous``'s vectors on the sample,
and for ``bf16`` against ``onnx`` on every name when both ran on the whole list. Wall-clock names/s
are what the machine gave; ``cpu_s`` (process CPU seconds) is reported beside them because on a
shared machine the 1-thread CPU-time ratio is the steadier speed-up. ``bf16`` runs only on CPUs with
native bfloat16 (emulated it is slower than float32 and is never the default there).

The physical limit: ``limits`` in the JSON has the machine's float32 matrix-product rate
(PyTorch, square 1024 and MiniLM-shaped ``(64 x 5) x 384 x 1536`` products, per thread count),
the model's multiply-adds per token (its Linear layers) and the mean tokens per name, hence the
names/s no float32 path can exceed on this CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench_linking import kb_names, synthetic_names
from machine_info import stamp

from kgrag.embed import SentenceTransformerEmbedder
from kgrag.embed.bf16_backend import max_cosine_error
from kgrag.embed.onnx_backend import OnnxSentenceEncoder


def previous_path(model, texts: list[str], batch_size: int = 64) -> np.ndarray:
    """The embedder's loop before this change: chunks of 8 batches in input order."""
    parts = []
    for start in range(0, len(texts), batch_size * 8):
        parts.append(model.encode(texts[start:start + batch_size * 8], batch_size=batch_size,
                                  convert_to_numpy=True, normalize_embeddings=True,
                                  show_progress_bar=False))
    return np.concatenate(parts)


def timed(fn, texts):
    cpu = time.process_time()
    started = time.perf_counter()
    out = fn(texts)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    return out, {"names": len(texts), "seconds": round(seconds, 2), "cpu_s": round(cpu, 2),
                 "names_per_s": round(len(texts) / seconds, 1)}


def int8_encoder(onnx_dir: Path, work: Path, threads: int) -> OnnxSentenceEncoder:
    """The rejected int8 variant: dynamic quantisation of the weight MatMuls (per-channel QInt8),
    written next to a copy of the export's manifest and tokenizer in ``work``."""
    import shutil

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = work / "int8"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.json", "tokenizer.json"):
        shutil.copyfile(onnx_dir / name, target / name)
    graph = onnx.load(str(onnx_dir / "model.onnx"), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    nodes = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    quantize_dynamic(str(onnx_dir / "model.onnx"), str(target / "model.onnx"),
                     weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=nodes,
                     op_types_to_quantize=["MatMul"])
    return OnnxSentenceEncoder(target, threads=threads)


def gemm_gflops(threads: int, m: int, k: int, n: int, seconds: float = 2.0) -> float:
    """float32 matrix-product rate (GFLOP/s, 2 m k n per product) of PyTorch on ``threads``."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    for _ in range(3):
        torch.mm(a, b, out=out)
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        torch.mm(a, b, out=out)
        count += 1
    return 2.0 * m * k * n * count / (time.perf_counter() - started) / 1e9


def physical_limits(threads: list[int], torch_emb, tokens: list[list[int]]) -> dict:
    """The machine's float32 product rate and what it allows: names/s <= rate / (FLOP per
    token x tokens per name), counting only the Linear layers (attention over ~5 tokens and the
    element-wise work are extra)."""
    import torch

    linear = sum(mod.in_features * mod.out_features for mod in torch_emb.model.modules()
                 if isinstance(mod, torch.nn.Linear))
    per_name = float(np.mean([len(t) for t in tokens]))
    out = {"linear_multiply_adds_per_token": linear, "tokens_per_name_mean": round(per_name, 2),
           "flop_per_name": round(2 * linear * per_name)}
    for n in threads:
        square = gemm_gflops(n, 1024, 1024, 1024)
        shaped = gemm_gflops(n, 320, 384, 1536)
        out[f"threads_{n}"] = {
            "gemm_1024_gflops": round(square, 1), "gemm_320x384x1536_gflops": round(shaped, 1),
            "names_per_s_ceiling": round(max(square, shaped) * 1e9 / (2 * linear * per_name))}
    return out


def speedups(row: dict, prev: dict) -> dict:
    per_name = row["seconds"] / row["names"]
    out = {"speedup_vs_previous": round(prev["seconds"] / prev["names"] / per_name, 2)}
    if row["threads"] == 1:  # one thread: CPU time is the work done, whatever the load
        out["speedup_vs_previous_cpu"] = round(
            prev["cpu_s"] / prev["names"] / (row["cpu_s"] / row["names"]), 2)
    return out


def bench_list(label: str, names: list[str], sample_n: int, threads: list[int],
               onnx_dir: Path, torch_emb: SentenceTransformerEmbedder, work: Path, *,
               full_onnx: bool = True, bf16: bool = True, int8: bool = True) -> list[dict]:
    import torch

    rng = random.Random(0)
    sample = rng.sample(names, min(sample_n, len(names)))
    rows = []
    for n in threads:
        torch.set_num_threads(n)
        onnx_emb = SentenceTransformerEmbedder(backend="onnx", precision="float32",
                                               show_progress=False)
        onnx_emb._onnx = OnnxSentenceEncoder(onnx_dir, threads=n)
        int8_emb = None
        if int8:
            int8_emb = SentenceTransformerEmbedder(backend="onnx", precision="float32",
                                                   show_progress=False)
            int8_emb._onnx = int8_encoder(onnx_dir, work, n)
        # today's default for a graph's names on a CPU with native bfloat16 (precision="auto"
        # picks it from BULK_MIN_TEXTS distinct texts up); forced here so the sample uses it too
        bf16_emb = SentenceTransformerEmbedder(precision="bfloat16", show_progress=False)
        bf16_emb._model = torch_emb.model
        for warm in (int8_emb.embed_documents if int8_emb else None, onnx_emb.embed_documents,
                     torch_emb.embed_documents, bf16_emb.embed_documents if bf16 else None,
                     lambda t: previous_path(torch_emb.model, t)):
            if warm is None:
                continue
            warm(sample[-64:])  # first calls pay one-off set-up; none of it is timed
        first_row = len(rows)
        ref, prev = timed(lambda t: previous_path(torch_emb.model, t), sample)
        base = {"list": label, "threads": n}
        prev_row = {**base, "path": "previous", **prev, "sample": True}
        rows.append(prev_row)
        _, tor = timed(torch_emb.embed_documents, sample)
        tor_row = {**base, "path": "torch", **tor, "sample": True}
        rows.append({**tor_row, **speedups(tor_row, prev_row)})
        got_sample, onx_s = timed(onnx_emb.embed_documents, sample)
        err = max_cosine_error(ref, got_sample)
        row = {**base, "path": "onnx", **onx_s, "sample": True, "max_1_minus_cos_vs_previous": err}
        rows.append({**row, **speedups(row, prev_row)})
        if int8_emb is not None:
            got8, q8 = timed(int8_emb.embed_documents, sample)
            row = {**base, "path": "onnx-int8 (rejected)", **q8, "sample": True,
                   "max_1_minus_cos_vs_previous": max_cosine_error(ref, got8)}
            rows.append({**row, **speedups(row, prev_row)})
        if not bf16:
            for row in rows[first_row:]:
                print(json.dumps(row), flush=True)
            if full_onnx:
                _, onx = timed(onnx_emb.embed_documents, names)
                row = {**base, "path": "onnx", **onx, "sample": False,
                       "max_1_minus_cos_vs_previous": err}
                rows.append({**row, **speedups(row, prev_row)})
                print(json.dumps(rows[-1]), flush=True)
            continue
        got16, b16 = timed(bf16_emb.embed_documents, sample)
        err16 = max_cosine_error(ref, got16)
        row = {**base, "path": "bf16", **b16, "sample": True,
               "max_1_minus_cos_vs_previous": err16}
        rows.append({**row, **speedups(row, prev_row)})
        full_onnx_vectors = None
        if full_onnx:
            full_onnx_vectors, onx = timed(onnx_emb.embed_documents, names)
            row = {**base, "path": "onnx", **onx, "sample": False,
                   "max_1_minus_cos_vs_previous": err}
            rows.append({**row, **speedups(row, prev_row)})
        full16, b16 = timed(bf16_emb.embed_documents, names)
        row = {**base, "path": "bf16", **b16, "sample": False,
               "max_1_minus_cos_vs_previous": err16}
        if full_onnx_vectors is not None:  # every name, against float32
            row["max_1_minus_cos_vs_onnx_float32_all_names"] = max_cosine_error(
                full_onnx_vectors, full16)
        rows.append({**row, **speedups(row, prev_row)})
        for row in rows[first_row:]:
            print(json.dumps(row), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--synthetic", type=int, default=1_000_000,
                        help="synthetic names to embed (0: MetaQA only)")
    parser.add_argument("--previous-sample", type=int, default=4000,
                        help="names timed with the previous (slow) path per list")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--full-onnx-max", type=int, default=100_000,
                        help="time float32 ONNX on whole synthetic lists up to this size "
                             "(larger: on the sample only)")
    parser.add_argument("--no-int8", action="store_true",
                        help="skip the rejected int8 variant")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/embed_throughput.json"))
    args = parser.parse_args(argv)
    from kgrag.embed.bf16_backend import cpu_has_native_bf16

    bf16 = cpu_has_native_bf16()
    threads = [int(t) for t in args.threads.split(",")]
    load_start = os.getloadavg()
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="embed-tput-"))
    torch_emb = SentenceTransformerEmbedder(backend="torch", show_progress=False)
    onnx_probe = SentenceTransformerEmbedder(backend="onnx")
    onnx_dir = onnx_probe.onnx_encoder.export_dir
    real = kb_names()
    limits = physical_limits(threads, torch_emb, onnx_probe.onnx_encoder.tokenize(real))
    print(json.dumps({"limits": limits}), flush=True)
    rows = bench_list(f"MetaQA ({len(real)} names)", real, args.previous_sample, threads,
                      onnx_dir, torch_emb, work, bf16=bf16, int8=not args.no_int8)
    if args.synthetic:
        synth = synthetic_names(real, args.synthetic)
        rows += bench_list(f"synthetic ({len(synth)} names)", synth, args.previous_sample,
                           threads[-1:], onnx_dir, torch_emb, work,
                           full_onnx=len(synth) <= args.full_onnx_max, bf16=bf16,
                           int8=not args.no_int8)
    result = {"rows": rows, "limits": limits, "bf16_native": bf16, "machine": {
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "shared": "2 cores shared with other engineers' jobs"},
        "command": "python benchmarks/embed_throughput.py " + " ".join(argv or sys.argv[1:])}
    Path(args.out).write_text(json.dumps(stamp(result), indent=2))
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    print("| names | path | threads | names/s | speed-up (wall) | speed-up (CPU time) "
          "| max 1-cos vs previous |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        err = r.get("max_1_minus_cos_vs_previous")
        print(f"| {r['list']}{' (sample)' if r['sample'] else ''} | {r['path']} | {r['threads']} "
              f"| {r['names_per_s']:.0f} | {r.get('speedup_vs_previous', 1.0):.2f} "
              f"| {r.get('speedup_vs_previous_cpu', '')} | {'' if err is None else f'{err:.1e}'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
