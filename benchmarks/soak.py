"""Soak / load test of the HTTP service (``examples/serve_fastapi.py``) on MetaQA's KB.

Starts the service on 127.0.0.1 (uvicorn workers sharing the memory-mapped graph), then N
concurrent clients send a mix of retrievals for ``--minutes`` after a warm-up:

* ``byokg`` -- a MetaQA 1-hop or 2-hop question (LLM-free ByoKG-RAG),
* ``graphraft`` -- the same kind of question (LLM-free GraphRAFT),
* ``ultrag`` -- the question's gold logical query (topic entity + MetaQA relation path), so
  every answer can be checked against the gold answers.

With ``--hostile F`` a fraction ``F`` of the requests are hostile (class ``hostile``): the
adversarial reply families of ``tests/hostile_inputs.py`` (open tags, deep brackets, digit
runs, lone surrogates, prose, ... at 100 / 1,000 / 2,000 characters) in the slots an LLM's
reply fills in the LLM modes -- UltRAG's logical query, and the question ByoKG-RAG and
GraphRAFT link and embed -- plus hostile HTTP bodies (``NaN``, lone surrogate escapes, deeply
nested and truncated JSON, a body over the service's size limit). A hostile request must get
a 200 or a 4xx: a 5xx, a dropped connection or a timeout is an error (goal 0), and the
ordinary requests running beside them must still all succeed.

Reported: requests, throughput, p50 / p90 / p99 / max latency per method and overall, errors (any
non-200 or failed connection; goal 0), ultrag answers that miss the gold set (goal 0), byokg hit@1,
and memory (RSS, PSS, USS from ``/proc/<pid>/smaps_rollup``) of every server process after start-up,
after the warm-up ("start") and at the end (goal: < 5 % growth from start to end), and the workers
lost (died and replaced; goal 0). Measuring starts only after every method has answered in every
worker, then ``--warmup`` seconds of load. Ends with SIGTERM and checks the service exits 0.
Loopback only; every request has a timeout and the run has a hard time cap.

    flock /work/bench.lock python benchmarks/soak.py --minutes 10 --clients 8 --workers 2
    flock /work/bench.lock python benchmarks/soak.py --minutes 4 --warmup 30 --hostile 0.2 \
        --out benchmarks/results/soak_metaqa_hostile.json
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
from machine_info import stamp

from kgrag.graph import load_graph, read_triples, save_graph

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "examples" / "serve_fastapi.py"
DATA = Path(os.environ.get("KGRAG_DATA", ROOT.parent / "shared" / "data")) / "metaqa"
CACHE = ROOT / "benchmarks" / ".cache"
RESULTS = ROOT / "benchmarks" / "results"
MIX = {"byokg": 0.4, "graphraft": 0.3, "ultrag": 0.3}
MAX_MINUTES = 120  # hard cap: the benchmark never runs unbounded


def prepare(graph_dir: Path, cache_dir: Path, methods: tuple[str, ...]) -> dict:
    """Save MetaQA's KB as a kgrag graph (with its index) and fill the embedding cache once,
    so the workers start from the cache instead of each embedding 43k names."""
    sys.path[:0] = [str(ROOT / "shared"), str(ROOT), str(SERVICE.parent)]
    import serve_fastapi

    from kgrag.embed import default_embedder

    started = time.perf_counter()
    if not (graph_dir / "manifest.json").exists():
        save_graph(read_triples(DATA / "kb_reconstructed.txt", sep="|"), graph_dir)
    kg = load_graph(graph_dir, mmap=True)
    serve_fastapi.build_methods(kg, methods, default_embedder(), str(cache_dir))
    return {"nodes": kg.num_nodes, "edges": kg.num_edges, "relations": kg.num_relations,
            "prepare_seconds": round(time.perf_counter() - started, 1)}


def workload(seed: int, per_hop: int) -> list[dict]:
    """Request bodies with the gold answers (``_gold``) for checking."""
    from kgrag.eval.datasets import load_metaqa

    requests = []
    for hop in (1, 2):
        for ex in load_metaqa(DATA, hop, limit=per_hop, seed=seed):
            gold = sorted(ex.answers)
            for method in ("byokg", "graphraft"):
                requests.append({"method": method, "question": ex.question_text, "top_k": 10,
                                 "_gold": gold})
            topic = ex.entities[0] if ex.entities else ""
            if topic and '"' not in topic and "\\" not in topic:
                path = " -> ".join(s.relation + ("_inv" if s.direction == "in" else "")
                                   for s in ex.relation_path)
                requests.append({"method": "ultrag", "query": f'"{topic}" -> {path}',
                                 "top_k": 100, "_gold": gold})
    return requests


HOSTILE_SIZES = (100, 1_000, 2_000)  # characters; 2,000 is the service's field limit


def hostile_workload() -> list[dict]:
    """Hostile requests (``_hostile``): every reply family of ``tests/hostile_inputs.py`` in
    UltRAG's query and in the byokg / graphraft question, and raw hostile bodies (``_raw``)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hostile_inputs import FAMILIES

    requests: list[dict] = []
    for name, make in FAMILIES.items():
        for size in HOSTILE_SIZES:
            text = make(size)
            requests.append({"method": "ultrag", "query": text, "_hostile": name})
            for method in ("byokg", "graphraft"):
                requests.append({"method": method, "question": text, "_hostile": name})
    raw = {
        "nan top_k": b'{"method": "ultrag", "query": "\\"x\\" -> r", "top_k": NaN}',
        "surrogate escape": b'{"method": "byokg", "question": "who is \\ud800?"}',
        "surrogate method": b'{"method": "\\udfff", "question": "x"}',
        "deep json": b"[" * 5_000 + b"]" * 5_000,
        "truncated json": b'{"method": "ultrag", "query": "\\"x\\" -> r",',
        "body over the limit": b'{"method": "byokg", "question": "' + b"x" * 100_000 + b'"}',
    }
    requests += [{"method": "raw", "_raw": body, "_hostile": name} for name, body in raw.items()]
    return requests


def klass(req: dict) -> str:
    """The mix class of a request: its method, or ``hostile``."""
    return "hostile" if "_hostile" in req else req["method"]


def post(port: int, body: dict, timeout: float) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/retrieve", json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        payload = resp.read()
        return resp.status, (json.loads(payload) if resp.status == 200 else
                             {"detail": payload[:300].decode("utf-8", "replace")})
    finally:
        conn.close()


def warm_every_worker(port: int, requests: list[dict], workers: int, timeout: float,
                      limit: float = 600.0) -> dict[str, list[int]]:
    """Send requests (a new connection each, from a few threads, so the kernel hands them to
    different workers) until every method has answered 200 in ``workers`` distinct worker
    processes; returns the worker pids seen per method. Raises if that takes over ``limit`` s
    or a request fails: the measurement starts only on a service that is fully up."""
    samples = {m: [r for r in requests if r["method"] == m][:50] for m in MIX}
    seen: dict[str, set[int]] = {m: set() for m in MIX}
    lock = threading.Lock()
    failures: list[str] = []
    deadline = time.monotonic() + limit

    def done() -> bool:
        return all(len(p) >= workers for p in seen.values())

    def loop(offset: int) -> None:
        i = offset
        while not done() and not failures and time.monotonic() < deadline:
            method = min(seen, key=lambda m: len(seen[m]))
            req = samples[method][i % len(samples[method])]
            i += 1
            try:
                status, reply = post(port, {k: v for k, v in req.items()
                                            if not k.startswith("_")}, timeout)
            except (OSError, http.client.HTTPException) as exc:
                failures.append(f"{method}: {type(exc).__name__}: {exc}")
                return
            if status != 200:
                failures.append(f"{method}: HTTP {status} {reply}")
                return
            with lock:
                seen[method].add(int(reply["pid"]))

    threads = [threading.Thread(target=loop, args=(k,), daemon=True) for k in range(2 * workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(limit + timeout)
    if failures or not done():
        raise RuntimeError(f"warm-up failed: {failures[:3] or 'not every worker answered'}; "
                           f"workers seen per method: {seen}")
    return {m: sorted(p) for m, p in seen.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_pids(pid: int) -> list[int]:
    """The supervisor and its worker processes."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return [pid] + [int(c) for c in children]


def memory(pid: int) -> dict[str, int]:
    """RSS / PSS / USS / shared in kB from ``/proc/<pid>/smaps_rollup``."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0])
    return {"rss_kb": fields.get("Rss", 0), "pss_kb": fields.get("Pss", 0),
            "uss_kb": fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
            "shared_kb": fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0)}


def snapshot(supervisor: int) -> dict:
    per = {}
    for pid in server_pids(supervisor):
        try:
            per[str(pid)] = memory(pid)
        except OSError:
            pass
    workers = [v for k, v in per.items() if int(k) != supervisor]
    return {"t": round(time.time(), 1), "processes": per,
            "workers_rss_kb": sum(w["rss_kb"] for w in workers),
            "workers_pss_kb": sum(w["pss_kb"] for w in workers),
            "workers_uss_kb": sum(w["uss_kb"] for w in workers),
            "loadavg": os.getloadavg()}


class Client(threading.Thread):
    """One keep-alive HTTP client sending random requests until ``deadline``."""

    def __init__(self, port: int, requests: list[dict], seed: int, deadline: float,
                 measure_from: float, timeout: float, mix: dict[str, float] = MIX) -> None:
        super().__init__(daemon=True)
        self.port, self.requests, self.deadline = port, requests, deadline
        self.measure_from, self.timeout = measure_from, timeout
        self.rng = random.Random(seed)
        self.records: list[tuple[str, float, int, str]] = []  # class, seconds, status, note
        per_class = {m: sum(1 for r in requests if klass(r) == m) for m in mix}
        self.cum_weights = list(itertools.accumulate(mix[klass(r)] / per_class[klass(r)]
                                                     for r in requests))

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        while time.monotonic() < self.deadline:
            req = self.rng.choices(self.requests, cum_weights=self.cum_weights)[0]
            body = req.get("_raw") or json.dumps(
                {k: v for k, v in req.items() if not k.startswith("_")}).encode()
            started = time.monotonic()
            note = ""
            try:
                conn.request("POST", "/retrieve", body, {"content-type": "application/json"})
                resp = conn.getresponse()
                payload = resp.read()
                status = resp.status
                if "_hostile" in req:
                    note = req["_hostile"]
                elif status == 200:
                    note = self.check(req, json.loads(payload))
                else:
                    note = payload[:300].decode("utf-8", "replace")
            except (OSError, http.client.HTTPException, ValueError) as exc:
                status, note = -1, f"{req.get('_hostile', '')} {type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            if started >= self.measure_from:
                self.records.append((klass(req), time.monotonic() - started, status, note))
        conn.close()

    @staticmethod
    def check(req: dict, resp: dict) -> str:
        gold = set(req["_gold"])
        answers = resp.get("answers") or []
        if req["method"] == "ultrag":
            return "" if gold <= set(answers) else "ultrag-miss"
        if req["method"] == "byokg":
            return "hit" if answers and answers[0] in gold else "no-hit"
        return ""


def failed(row: tuple[str, float, int, str]) -> bool:
    """An ordinary request must answer 200; a hostile one 200 or 4xx (never 5xx or no answer)."""
    status = row[2]
    return not 200 <= status < 500 if row[0] == "hostile" else status != 200


def summarise(records: list[tuple[str, float, int, str]], seconds: float) -> dict:
    out: dict = {}
    for method in sorted(MIX) + ["hostile", "all"]:
        rows = [r for r in records if method == "all" or r[0] == method]
        if not rows:
            continue
        lat = np.array([r[1] for r in rows]) * 1000
        errors = [r for r in rows if failed(r)]
        out[method] = {
            "requests": len(rows), "per_second": round(len(rows) / seconds, 2),
            "p50_ms": round(float(np.percentile(lat, 50)), 1),
            "p90_ms": round(float(np.percentile(lat, 90)), 1),
            "p99_ms": round(float(np.percentile(lat, 99)), 1),
            "max_ms": round(float(lat.max()), 1),
            "errors": len(errors), "error_examples": sorted({r[3] for r in errors})[:5],
        }
        if method == "hostile":
            statuses: dict[str, int] = {}
            for r in rows:
                statuses[str(r[2])] = statuses.get(str(r[2]), 0) + 1
            out[method]["statuses"] = dict(sorted(statuses.items()))
            out[method]["families"] = len({r[3] for r in rows})
        if method == "ultrag":
            out[method]["gold_misses"] = sum(1 for r in rows if r[3] == "ultrag-miss")
        if method == "byokg":
            hits = sum(1 for r in rows if r[3] == "hit")
            out[method]["hit_at_1"] = round(hits / len(rows), 3)
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=60.0, help="seconds of load before 'start'")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--questions", type=int, default=500, help="MetaQA questions per hop")
    p.add_argument("--timeout", type=float, default=60.0, help="per-request timeout (s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hostile", type=float, default=0.0,
                   help="fraction of hostile requests (0 = the ordinary mix only)")
    p.add_argument("--out", default=str(RESULTS / "soak_metaqa.json"))
    args = p.parse_args(argv)
    if not 0 < args.minutes <= MAX_MINUTES:
        p.error(f"--minutes must be in (0, {MAX_MINUTES}]")
    if not 0 <= args.hostile < 1:
        p.error("--hostile must be in [0, 1)")
    mix = {m: w * (1 - args.hostile) for m, w in MIX.items()}
    if args.hostile:
        mix["hostile"] = args.hostile
    methods = tuple(MIX)
    graph_dir, cache_dir = CACHE / "metaqa_graph", CACHE / "metaqa_embeddings"
    info = prepare(graph_dir, cache_dir, methods)
    requests = workload(args.seed, args.questions)
    ordinary = list(requests)
    if args.hostile:
        requests += hostile_workload()
    port = free_port()
    log_path = CACHE / "soak_server.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "shared"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, str(SERVICE), str(graph_dir), "--port", str(port),
             "--workers", str(args.workers), "--methods", ",".join(methods),
             "--cache-dir", str(cache_dir), "--log-level", "warning"],
            env=env, stdout=log, stderr=subprocess.STDOUT)
    result: dict = {"command": "python benchmarks/soak.py " + " ".join(argv or sys.argv[1:]),
                    "graph": info, "clients": args.clients, "workers": args.workers,
                    "minutes": args.minutes, "warmup_seconds": args.warmup,
                    "requests_in_pool": {m: sum(1 for r in requests if klass(r) == m)
                                         for m in mix},
                    "mix": mix, "machine": "shared 2-core machine (other engineers' jobs ran too)"}
    try:
        started = time.monotonic()
        while True:  # a worker answers only once its methods are built (lifespan)
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() - started > 600:
                raise RuntimeError(f"the service did not start; see {log_path}")
            time.sleep(0.5)
        # every method answered in every worker: nothing is built on a measured request
        result["workers_warmed"] = warm_every_worker(port, ordinary, args.workers, args.timeout)
        result["startup_seconds"] = round(time.monotonic() - started, 1)
        result["memory_after_startup"] = snapshot(server.pid)
        worker_pids = set.union(*(set(p) for p in result["workers_warmed"].values()))
        now = time.monotonic()
        measure_from = now + args.warmup
        deadline = measure_from + args.minutes * 60
        clients = [Client(port, requests, args.seed * 1000 + i, deadline, measure_from,
                          args.timeout, mix) for i in range(args.clients)]
        for c in clients:
            c.start()
        time.sleep(args.warmup)
        result["memory_start"] = snapshot(server.pid)
        timeline = [result["memory_start"]]
        while time.monotonic() < deadline:
            time.sleep(min(60, max(0.1, deadline - time.monotonic())))
            timeline.append(snapshot(server.pid))
        for c in clients:
            c.join(args.timeout + 10)
        result["memory_end"] = snapshot(server.pid)
        alive = set(server_pids(server.pid))
        # a worker that died (and was replaced by uvicorn) is an error of the service
        result["workers_lost"] = sorted(worker_pids - alive)
        result["memory_timeline"] = [{k: v for k, v in s.items() if k != "processes"}
                                     for s in timeline]
        records = [r for c in clients for r in c.records]
        result["results"] = summarise(records, args.minutes * 60)
        start_kb, end_kb = (result[k]["workers_rss_kb"] for k in ("memory_start", "memory_end"))
        result["workers_rss_growth_pct"] = round(100 * (end_kb - start_kb) / start_kb, 2)
        pss0, pss1 = (result[k]["workers_pss_kb"] for k in ("memory_start", "memory_end"))
        result["workers_pss_growth_pct"] = round(100 * (pss1 - pss0) / pss0, 2)
        result["loadavg_start"] = result["memory_start"]["loadavg"]
        result["loadavg_end"] = result["memory_end"]["loadavg"]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            result["exit_code"] = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            result["exit_code"] = "killed after 60 s"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stamp(result), indent=2) + "\n", encoding="utf-8")
    print(table(result))
    return result


def table(result: dict) -> str:
    lines = ["| method | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | errors |",
             "|---|---|---|---|---|---|---|---|"]
    for method, row in result.get("results", {}).items():
        lines.append(f"| {method} | {row['requests']} | {row['per_second']} | {row['p50_ms']} | "
                     f"{row['p90_ms']} | {row['p99_ms']} | {row['max_ms']} | {row['errors']} |")
    s0, s1 = result.get("memory_start", {}), result.get("memory_end", {})
    if s0 and s1:
        lines.append("")
        lines.append(f"workers RSS {s0['workers_rss_kb'] / 1024:.0f} -> "
                     f"{s1['workers_rss_kb'] / 1024:.0f} MB "
                     f"({result['workers_rss_growth_pct']:+.2f} %), PSS "
                     f"{s0['workers_pss_kb'] / 1024:.0f} -> {s1['workers_pss_kb'] / 1024:.0f} MB "
                     f"({result['workers_pss_growth_pct']:+.2f} %); workers lost "
                     f"{len(result.get('workers_lost', []))}; exit code "
                     f"{result.get('exit_code')}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
