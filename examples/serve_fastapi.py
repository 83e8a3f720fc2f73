"""Serve kgrag retrievers over HTTP: FastAPI + uvicorn, several worker processes sharing one
memory-mapped graph, a health endpoint, graceful shutdown and atomic graph reload.

Save a graph once, then serve it::

    kgrag ... / save_graph(read_triples("triples.tsv"), "graph/")     # or --from-triples
    python examples/serve_fastapi.py graph/ --workers 4 --port 8000
    curl -s localhost:8000/health
    curl -s localhost:8000/retrieve -H 'content-type: application/json' \\
        -d '{"method": "byokg", "question": "Where was the director of Tokyo Godfathers born?"}'
    curl -s localhost:8000/retrieve -H 'content-type: application/json' \\
        -d '{"method": "ultrag", "query": "\\"Tokyo Godfathers\\" -> directed_by -> born_in"}'

Every method runs without an LLM, so the service works offline:

* ``byokg`` -- ByoKG-RAG's LLM-free mode (question n-grams linked to entities, triplets and
  paths scored against the question; answer candidates). Uses the packaged MiniLM.
* ``graphraft`` -- GraphRAFT with its embedding selector (no LLM). Uses MiniLM.
* ``ultrag`` -- UltRAG's executor on a logical query you send in ``query`` (the DSL, e.g.
  ``AND("A" -> r, "B" -> s)``); names resolve exactly, no model.

To put an LLM behind it, pass ``llm=`` where the methods are built (:func:`build_methods`).

**Process model.** ``--workers N`` starts N uvicorn worker processes (uvicorn's supervisor
restarts a worker that dies). Each worker opens the graph with
``load_graph(path, mmap=True)``: the edge arrays and adjacency index are mapped
read-only from the saved ``.npy`` files, so the N workers share one copy in the page cache
instead of holding N private copies (name tables and the embedding model are still per
process; see docs/benchmarks.md for the numbers).

**Bounded work per worker.** Retrievals are CPU-bound (numpy, the embedding model), so more
of them at once than a worker has cores only adds memory (every running retrieval holds its
own walks, batches and model buffers) and contention. A worker runs at most
``--max-concurrency`` retrievals at a time (default 2); the rest wait in the event loop, which
costs nothing, and a request whose client has gone away while it waited is dropped instead of
computed. The workers start with one intra-op thread each (``OMP_NUM_THREADS`` /
``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` = ``--intra-op-threads``, default 1, unless already
set; ONNX Runtime and PyTorch honour it), so N workers use about N cores. uvicorn's supervisor
kills a worker that does not answer its health ping in ``--healthcheck-timeout`` seconds
(uvicorn's default 5 s is too short for a loaded machine; here 30 s).

**Start-up.** A worker accepts connections only when its methods are *built*: node-name vectors
(read from ``--cache-dir``, kgrag's vector cache, mapped read-only and so shared by the
workers), the linkers' fuzzy and FAISS indexes, ByoKG-RAG's triplet scorer, and one warm-up
retrieval per method. Nothing large is computed on a request.

**Graceful shutdown.** SIGTERM (or Ctrl-C) stops accepting connections, lets in-flight requests
finish (at most ``--graceful-timeout`` seconds), then exits 0.

**Atomic reload.** A worker never changes the graph under a running request: a reload loads the
new graph *completely* (and warms the methods on it), then swaps one reference. A request holds
the bundle it started with until it finishes, so it completes on the old graph; later requests
see the new one. A failed load (a half-written or corrupt folder) keeps the old graph serving
and is reported in ``/health`` as ``last_reload_error``. Deploy a new graph by saving it over
the served folder (``KnowledgeGraph.save`` writes into a temporary folder and renames it into
place) or by re-pointing a symlink; every worker notices within ``--watch-interval`` seconds.
``POST /admin/reload`` reloads the worker that receives it at once (keep ``/admin`` off the
public network). Never copy new files over the served ones (``cp new/* graph/``): the workers
map them, and kgrag answers such a rewrite with errors (503 here) until the watcher reloads,
where an unchecked process would fault or answer from a mix of two graphs.

**Hostile requests.** A request body over ``--max-body-bytes`` (default 64 KiB; a question is
at most 2,000 characters) is answered 413 before it is read: at once when its
``Content-Length`` says so, else as soon as a streamed (chunked) body passes the limit, so a
huge body costs the worker at most the limit. A 422 names the fields and what is wrong with
them, never echoes the input (bounded size), so text that is not valid Unicode (a lone
surrogate escape such as ``"\\ud800"``, which pydantic refuses) and numbers JSON cannot carry
(``NaN``, ``Infinity``) are a 422, not a 500 from writing them back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Literal

from fastapi import Request, Response
from pydantic import BaseModel, Field

from kgrag.graph import load_graph, read_triples, save_graph

log = logging.getLogger("kgrag.serve")

#: Environment variable carrying the configuration to the worker processes (uvicorn starts each
#: worker by importing this module, so arguments cannot be passed in any other way).
CONFIG_ENV = "KGRAG_SERVE_CONFIG"
METHODS = ("byokg", "graphraft", "ultrag")
MAX_QUESTION_CHARS = 2_000
MAX_QUERY_CHARS = 2_000
#: request bodies above this are refused with 413 before they are read (a full request with a
#: 2,000-character question and query, every character \u-escaped, stays far below it)
MAX_BODY_BYTES = 64 * 1024
MAX_REPORTED_ERRORS = 10  # a 422 lists at most this many problems
#: thread-pool sizes of OpenMP / MKL / OpenBLAS (numpy, PyTorch) and ONNX Runtime (kgrag reads
#: OMP_NUM_THREADS for its sessions); set for the workers unless the caller set them
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class ServeConfig:
    """What every worker needs to know: the graph folder and how to serve it."""

    graph: str
    methods: tuple[str, ...] = METHODS
    mmap: bool = True
    watch_interval: float = 2.0  # seconds between checks of the graph folder (0 = never)
    cache_dir: str | None = None  # on-disk cache of node-name embeddings, shared by workers
    max_concurrency: int = 2  # retrievals running at once per worker; the rest wait
    test_hooks: bool = False  # accept "delay_ms" in requests (tests of drain / reload only)
    max_body_bytes: int = MAX_BODY_BYTES  # larger request bodies: 413, not read

    def __post_init__(self) -> None:
        unknown = set(self.methods) - set(METHODS)
        if unknown or not self.methods:
            raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {self.methods}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {self.max_concurrency}")
        if self.max_body_bytes < 1024:
            raise ValueError(f"max_body_bytes must be at least 1024, got {self.max_body_bytes}")

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> "ServeConfig":
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            raise RuntimeError(f"set {CONFIG_ENV} (run this module as a script to serve)")
        data = json.loads(raw)
        data["methods"] = tuple(data["methods"])
        return cls(**data)


# ---------------------------------------------------------------------------- graph bundles
def graph_version(folder: str) -> str:
    """Identity of the graph currently saved at ``folder`` (follows a symlink).

    ``KnowledgeGraph.save`` renames a new folder into place, so a new save is a new inode of
    ``manifest.json``; mtime and size catch an in-place rewrite as well.
    """
    st = os.stat(Path(folder) / "manifest.json")
    return f"{st.st_ino}-{st.st_mtime_ns}-{st.st_size}"


def build_methods(kg: Any, names: tuple[str, ...], embedder: Any, cache_dir: str | None
                  ) -> dict[str, Any]:
    """The retrieval methods served for one graph, *built*: every index and vector set a
    request needs exists when this returns, so no request computes one (the first requests of
    a worker arrive together; computing 43k name vectors inside them took minutes under load).

    ``cache_dir`` becomes kgrag's cache root for the process (:func:`kgrag.embed.configure_cache`):
    node-name vectors are read from ``cache_dir/vectors`` (written there once, by whichever
    process is first), mapped read-only, so the workers share one copy in the page cache.
    Pass ``llm=`` to the constructors here to serve the LLM modes instead.
    """
    if cache_dir:
        from kgrag.embed import configure_cache

        configure_cache(cache_dir)
    methods: dict[str, Any] = {}
    if "byokg" in names:
        from kgrag.methods.byokg import ByoKGRAG

        byokg = ByoKGRAG(kg, embedder=embedder)
        _ = byokg.scorer  # node and relation vectors (shared, cached on disk)
        byokg.linker.build()  # fuzzy trigram index and the graph's FAISS index
        methods["byokg"] = byokg
    if "graphraft" in names:
        from kgrag.methods.graphraft import GraphRAFT

        graphraft = GraphRAFT(kg, embedder=embedder)
        graphraft.linker.build()  # the same shared FAISS index
        methods["graphraft"] = graphraft
    if "ultrag" in names:
        from kgrag.methods.ultrag import UltRAG

        # symbolic executor: exact traversal in ~0.1 ms per query; executor="neural" (UltRAG's
        # default, UltraQuery) costs about 4 us per graph node per projection
        methods["ultrag"] = UltRAG(kg, linking="exact", executor="symbolic")
    warm_up(kg, methods)
    return methods


_PLAIN_RELATION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def warm_up(kg: Any, methods: dict[str, Any]) -> None:
    """One retrieval per method about an entity of the graph: whatever a method still builds
    on first use (lazy tables, the model's session) is built here, before the worker serves.
    UltRAG is warmed with a query over the first edge whose names the DSL takes as written."""
    if not kg.num_edges:
        return
    head = kg.node_names[int(kg.heads[0])]
    for name in ("byokg", "graphraft"):
        if name in methods:
            methods[name].retrieve(f"What is {head} related to?")
    if "ultrag" in methods:
        for edge in range(min(kg.num_edges, 1000)):
            head = kg.node_names[int(kg.heads[edge])]
            relation = kg.relation_names[int(kg.rels[edge])]
            if _PLAIN_RELATION.fullmatch(relation) and not set(head) & {'"', "\\"}:
                methods["ultrag"].retrieve_query(f'"{head}" -> {relation}', "")
                break


@dataclass
class Bundle:
    """One loaded graph and the methods built on it; never modified after it is published."""

    graph: Any
    methods: dict[str, Any]
    version: str
    generation: int
    loaded_seconds: float

    def retrieve(self, method: str, question: str, query: str | None, top_k: int) -> dict:
        if method not in self.methods:
            raise LookupError(f"method {method!r} is not served here; served: "
                              f"{sorted(self.methods)}")
        core = self.methods[method]
        if method == "ultrag":
            if not query:
                raise ValueError("ultrag needs 'query': a logical query such as "
                                 "'\"Tokyo Godfathers\" -> directed_by'")
            result = core.retrieve_query(query, question)
        else:
            if not question.strip():
                raise ValueError("'question' is empty")
            result = core.retrieve(question)
        items = [{"text": item.verbalize(), "score": _score(item), "kind": type(item).__name__}
                 for item in result.items[:top_k]]
        meta = result.metadata
        answers = meta.get("answer_candidates") or [
            i["text"].rsplit(" (", 1)[0] for i in items if i["kind"] == "ScoredEntity"]
        return {"method": method, "items": items, "answers": answers[:top_k],
                "entities": meta.get("entities", []), "query": meta.get("query"),
                "generation": self.generation, "pid": os.getpid()}


def _score(item: Any) -> float | None:
    score = getattr(item, "score", None)
    return None if score is None else float(score)


class GraphHolder:
    """The worker's current :class:`Bundle`, replaced atomically on reload.

    Readers take ``holder.bundle`` once per request and use that object to the end: publishing a
    new bundle is a single reference assignment, so a request sees either the old graph or the
    new one, never a mix, and nothing is freed while a request still uses it.
    """

    def __init__(self, config: ServeConfig, embedder: Any = None) -> None:
        self.config = config
        self._embedder = embedder
        self._bundle: Bundle | None = None
        self._reload_lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._count_lock = threading.Lock()
        self.in_flight = 0  # retrievals running now
        self.served = 0
        self.waiting = 0  # requests waiting for a free slot (see ServeConfig.max_concurrency)
        self.dropped = 0  # requests whose client went away before they ran
        self.last_reload_error: str | None = None

    @property
    def bundle(self) -> Bundle:
        bundle = self._bundle
        if bundle is None:
            raise RuntimeError("no graph loaded yet")
        return bundle

    def embedder(self) -> Any:
        if self._embedder is None and {"byokg", "graphraft"} & set(self.config.methods):
            from kgrag.embed import default_embedder

            self._embedder = default_embedder()
        return self._embedder

    def reload(self, force: bool = False) -> bool:
        """Load the graph at the configured folder if it changed (or ``force``); swap it in.

        Returns whether a new bundle was published. A failing load raises and leaves the current
        bundle in place.
        """

        with self._reload_lock:
            version = graph_version(self.config.graph)
            current = self._bundle
            if current is not None and not force and version == current.version:
                return False
            started = time.perf_counter()
            graph = load_graph(self.config.graph, mmap=self.config.mmap)
            methods = build_methods(graph, self.config.methods, self.embedder(),
                                    self.config.cache_dir)
            generation = 1 if current is None else current.generation + 1
            self._bundle = Bundle(graph, methods, version, generation,
                                  time.perf_counter() - started)
            self.last_reload_error = None
            log.info("pid %d serves graph generation %d (%d nodes, %d edges, %.2f s)",
                     os.getpid(), generation, graph.num_nodes, graph.num_edges,
                     self._bundle.loaded_seconds)
            return True

    def _watch(self) -> None:
        while not self._stop.wait(self.config.watch_interval):
            try:
                self.reload()
            except Exception as exc:  # keep serving the old graph; report it on /health
                self.last_reload_error = f"{type(exc).__name__}: {exc}"
                log.warning("graph reload failed, still serving generation %d: %s",
                            self.bundle.generation, self.last_reload_error)

    def start_watching(self) -> None:
        if self.config.watch_interval > 0 and self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="kgrag-graph-watch",
                                             daemon=True)
            self._watcher.start()

    def stop_watching(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)

    def count(self, counter: str, delta: int) -> None:
        with self._count_lock:
            setattr(self, counter, getattr(self, counter) + delta)

    @contextmanager
    def request(self) -> Iterator[Bundle]:
        """The bundle a request runs on, counted as in flight until it is done."""
        bundle = self.bundle
        with self._count_lock:
            self.in_flight += 1
        try:
            yield bundle
        finally:
            with self._count_lock:
                self.in_flight -= 1
                self.served += 1


# ---------------------------------------------------------------------------- the ASGI app
class RetrieveRequest(BaseModel):
    """``POST /retrieve``: ``question`` for byokg / graphraft, ``query`` (the DSL) for ultrag."""

    method: Literal["byokg", "graphraft", "ultrag"]
    question: str = Field("", max_length=MAX_QUESTION_CHARS)
    query: str | None = Field(None, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(10, ge=1, le=100)
    delay_ms: int = Field(0, ge=0, le=10_000)


class BodySizeLimit:
    """ASGI middleware: a request body over ``max_bytes`` is answered 413 without being read.

    A declared ``Content-Length`` over the limit is refused before any byte of the body is
    received; a streamed (chunked) body is read only until it passes the limit. A body within
    the limit is read here (at most ``max_bytes``) and handed to the application unchanged.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = [value for name, value in scope.get("headers", ()) if name == b"content-length"]
        if declared:
            try:
                length = int(declared[0])
            except ValueError:
                await self._reply(send, 400, "Content-Length is not a number")
                return
            if length > self.max_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away before it finished sending
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body_sent = False

        async def replay() -> dict:
            nonlocal body_sent
            if not body_sent:
                body_sent = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # then whatever comes (a disconnect)

        await self.app(scope, replay, send)

    async def _too_large(self, send: Any) -> None:
        await self._reply(send, 413, f"request body over {self.max_bytes} bytes")

    @staticmethod
    async def _reply(send: Any, status: int, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        # "connection: close": the rest of the body is never read, so the connection cannot
        # carry another request
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def validation_reply(errors: list[dict]) -> Response:
    """The 422 for a request that does not validate: where and what, never the input.

    FastAPI's default reply repeats each bad input (a 50 MB string came back as a 52 MB error)
    and fails with a 500 on inputs JSON cannot carry (NaN, a lone surrogate); here each error
    keeps only its location, message and type, cut to a bounded size, written as ASCII JSON.
    """
    detail = [{"loc": [str(part)[:64] for part in list(error.get("loc", ()))[:8]],
               "msg": str(error.get("msg", ""))[:200], "type": str(error.get("type", ""))[:64]}
              for error in errors[:MAX_REPORTED_ERRORS]]
    if len(errors) > MAX_REPORTED_ERRORS:
        detail.append({"loc": [], "msg": f"and {len(errors) - MAX_REPORTED_ERRORS} more errors",
                       "type": "truncated"})
    return Response(json.dumps({"detail": detail}, ensure_ascii=True), status_code=422,
                    media_type="application/json")


def create_app(config: ServeConfig | None = None, *, embedder: Any = None) -> Any:
    """The FastAPI application (uvicorn calls this in every worker: ``factory=True``)."""
    import anyio
    from fastapi import FastAPI, HTTPException
    from fastapi.exceptions import RequestValidationError

    from kgrag.errors import GraphLoadError, KgragError

    config = config or ServeConfig.from_env()
    holder = GraphHolder(config, embedder)
    slots: dict[str, asyncio.Semaphore] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        # the worker accepts connections only once the graph is loaded and its methods built
        await anyio.to_thread.run_sync(lambda: holder.reload(force=True))
        slots["work"] = asyncio.Semaphore(config.max_concurrency)  # bound to this event loop
        holder.start_watching()
        yield
        holder.stop_watching()  # uvicorn has drained the in-flight requests by now

    app = FastAPI(title="kgrag retrieval service", lifespan=lifespan)
    app.state.holder = holder
    app.add_middleware(BodySizeLimit, max_bytes=config.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        return validation_reply(list(exc.errors()))

    # A retrieval (CPU-bound numpy, thread-safe in kgrag) runs in a worker thread, so it never
    # blocks the event loop that accepts requests; at most `max_concurrency` run at once.
    @app.get("/health")
    def health() -> dict:
        bundle = holder.bundle
        return {"status": "ok", "pid": os.getpid(), "generation": bundle.generation,
                "graph_version": bundle.version, "nodes": bundle.graph.num_nodes,
                "edges": bundle.graph.num_edges, "mmap": config.mmap,
                "methods": sorted(bundle.methods), "in_flight": holder.in_flight,
                "served": holder.served, "last_reload_error": holder.last_reload_error,
                "max_concurrency": config.max_concurrency, "waiting": holder.waiting,
                "dropped": holder.dropped}

    def run(req: RetrieveRequest) -> dict:
        with holder.request() as bundle:
            if req.delay_ms:
                marker_dir = os.environ.get("KGRAG_SERVE_TEST_MARKERS")
                if marker_dir:  # tests: say "this request is running" to the test process
                    Path(marker_dir, f"{os.getpid()}-{time.monotonic_ns()}").touch()
                time.sleep(req.delay_ms / 1000)  # simulates a slow call (e.g. an LLM) in tests
            try:
                return bundle.retrieve(req.method, req.question, req.query, req.top_k)
            except LookupError as exc:
                raise HTTPException(404, str(exc)[:500]) from None
            except GraphLoadError as exc:  # the served files changed under the worker
                raise HTTPException(503, f"the graph is being replaced; retry: {exc}"[:500]
                                    ) from None
            except (KgragError, ValueError) as exc:  # bad query / question: the caller's fault
                raise HTTPException(422, f"{type(exc).__name__}: {exc}"[:500]) from None

    @app.post("/retrieve", response_model=None)
    async def retrieve(req: RetrieveRequest, request: Request) -> dict | Response:
        if req.delay_ms and not config.test_hooks:
            raise HTTPException(422, "delay_ms is a test hook; start the server with --test-hooks")
        slot = slots["work"]
        holder.count("waiting", +1)
        try:
            await slot.acquire()
        finally:
            holder.count("waiting", -1)
        try:
            if await request.is_disconnected():  # the client gave up while it waited
                holder.count("dropped", +1)
                return Response(status_code=499)  # nobody reads it; the work is not done
            # not cancellable: the slot stays taken until the thread has really finished
            return await anyio.to_thread.run_sync(run, req)
        finally:
            slot.release()

    @app.post("/admin/reload")
    def admin_reload() -> dict:
        try:
            changed = holder.reload(force=True)
        except Exception as exc:
            holder.last_reload_error = f"{type(exc).__name__}: {exc}"
            raise HTTPException(500, f"reload failed, still serving the old graph: "
                                     f"{holder.last_reload_error}") from None
        bundle = holder.bundle
        return {"reloaded": changed, "generation": bundle.generation, "pid": os.getpid(),
                "graph_version": bundle.version, "seconds": round(bundle.loaded_seconds, 3)}

    return app


# ---------------------------------------------------------------------------- command line
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph", help="folder written by KnowledgeGraph.save")
    p.add_argument("--from-triples", metavar="FILE",
                   help="build the graph from a triples file and save it to GRAPH first")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"comma-separated subset of {','.join(METHODS)}")
    p.add_argument("--no-mmap", action="store_true", help="load private copies in every worker")
    p.add_argument("--watch-interval", type=float, default=2.0,
                   help="seconds between checks for a new graph at GRAPH (0 = off)")
    p.add_argument("--cache-dir", help="cache node-name embeddings here (shared by the workers)")
    p.add_argument("--max-concurrency", type=int, default=2,
                   help="retrievals running at once per worker (the rest wait)")
    p.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES,
                   help="request bodies larger than this are refused (413) without being read")
    p.add_argument("--intra-op-threads", type=int, default=1,
                   help="BLAS / ONNX Runtime / PyTorch threads per worker, unless "
                        "OMP_NUM_THREADS is already set")
    p.add_argument("--healthcheck-timeout", type=int, default=30,
                   help="seconds a worker may take to answer the supervisor's ping before it "
                        "is killed and replaced")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="on SIGTERM, wait at most this long for in-flight requests")
    p.add_argument("--test-hooks", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="info")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if args.from_triples:

        save_graph(read_triples(args.from_triples), args.graph)
    config = ServeConfig(graph=str(Path(args.graph).resolve()),
                         methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()),
                         mmap=not args.no_mmap, watch_interval=args.watch_interval,
                         cache_dir=args.cache_dir, max_concurrency=args.max_concurrency,
                         test_hooks=args.test_hooks, max_body_bytes=args.max_body_bytes)
    graph_version(config.graph)  # fail here, once, if the folder holds no saved graph
    os.environ[CONFIG_ENV] = config.to_env()  # inherited by the spawned workers
    for var in THREAD_VARIABLES:  # read by the libraries when the workers import them
        os.environ.setdefault(var, str(args.intra_op_threads))
    uvicorn.run("serve_fastapi:create_app", factory=True, app_dir=str(Path(__file__).parent),
                host=args.host, port=args.port, workers=args.workers,
                timeout_graceful_shutdown=args.graceful_timeout,
                timeout_worker_healthcheck=args.healthcheck_timeout, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
