"""The FastAPI service example (``examples/serve_fastapi.py``).

In process (FastAPI's ``TestClient``, the session MiniLM): every served method answers over
HTTP, bad input is a 4xx with the reason, and a reload swaps the graph atomically while a
request is in flight. For real: the script runs as uvicorn with two worker processes on
127.0.0.1; both workers pick up a newly saved graph while clients keep sending requests (none
fails), a request in flight during the reload finishes on the old graph, and SIGTERM drains
an in-flight request and exits 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kgrag import KnowledgeGraph
from kgrag.graph import load_graph, save_graph

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "serve_fastapi.py"
MOVIES = ROOT / "examples" / "data" / "movies.tsv"
QUERY = '"Tokyo Godfathers" -> directed_by'
NEW_DIRECTOR = "Imaginary Co-Director"

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")


def serve_module():
    spec = importlib.util.spec_from_file_location("serve_fastapi", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["serve_fastapi"] = module  # pydantic resolves the request model through it
    spec.loader.exec_module(module)
    return module


def save_movies(folder: Path, *, extra: bool = False) -> None:
    triples = [tuple(line.split("\t")) for line in MOVIES.read_text("utf-8").splitlines()[1:]]
    if extra:
        triples.append(("Tokyo Godfathers", "directed_by", NEW_DIRECTOR))
    save_graph(KnowledgeGraph.from_triples(triples), folder)


@pytest.fixture(scope="module")
def serve():
    return serve_module()


def test_every_method_answers_over_http(serve, minilm, tmp_path):
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    config = serve.ServeConfig(graph=str(tmp_path / "g"), watch_interval=0)
    with TestClient(serve.create_app(config, embedder=minilm)) as client:
        health = client.get("/health").json()
        assert (health["status"], health["nodes"], health["generation"]) == ("ok", 198, 1)
        assert health["mmap"] is True and health["methods"] == ["byokg", "graphraft", "ultrag"]

        byokg = client.post("/retrieve", json={
            "method": "byokg", "question": "Where was the director of Tokyo Godfathers born?"})
        assert byokg.status_code == 200, byokg.text
        assert "Tokyo Godfathers" in byokg.json()["entities"]
        assert "Sapporo" in byokg.json()["answers"][:3]

        graphraft = client.post("/retrieve", json={
            "method": "graphraft", "question": "Who directed Tokyo Godfathers?", "top_k": 3})
        assert graphraft.status_code == 200, graphraft.text
        assert any("Satoshi Kon" in item["text"] for item in graphraft.json()["items"])
        assert len(graphraft.json()["items"]) <= 3

        ultrag = client.post("/retrieve", json={"method": "ultrag", "query": QUERY}).json()
        assert ultrag["answers"] == ["Satoshi Kon"] and ultrag["items"][0]["score"] == 1.0

        bad_query = client.post("/retrieve", json={"method": "ultrag", "query": '"Tokyo ->'})
        assert bad_query.status_code == 422 and "QuerySyntaxError" in bad_query.json()["detail"]
        unknown_relation = client.post("/retrieve", json={"method": "ultrag",
                                                          "query": '"Tokyo Godfathers" -> nope'})
        assert unknown_relation.status_code == 422
        assert client.post("/retrieve", json={"method": "ultrag"}).status_code == 422
        assert client.post("/retrieve", json={"method": "byokg",
                                              "question": " "}).status_code == 422
        assert client.post("/retrieve", json={"method": "simgrag",
                                              "question": "x"}).status_code == 422
        assert client.post("/retrieve", json={"method": "byokg", "question": "x" * 2001}
                           ).status_code == 422
        hook = client.post("/retrieve", json={"method": "ultrag", "query": QUERY, "delay_ms": 5})
        assert hook.status_code == 422 and "test hook" in hook.json()["detail"]


def test_reload_swaps_the_graph_while_a_request_is_in_flight(serve, tmp_path):
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    config = serve.ServeConfig(graph=str(tmp_path / "g"), methods=("ultrag",), watch_interval=0,
                               test_hooks=True)
    with TestClient(serve.create_app(config)) as client:
        slow: dict = {}
        started = threading.Event()

        def slow_request() -> None:
            started.set()
            slow["response"] = client.post("/retrieve", json={"method": "ultrag", "query": QUERY,
                                                              "delay_ms": 800})

        thread = threading.Thread(target=slow_request)
        thread.start()
        started.wait()
        deadline = time.monotonic() + 5
        while client.get("/health").json()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        save_movies(tmp_path / "g", extra=True)
        reload = client.post("/admin/reload").json()
        assert reload["reloaded"] is True and reload["generation"] == 2
        after = client.post("/retrieve", json={"method": "ultrag", "query": QUERY}).json()
        thread.join()
        before = slow["response"].json()
        # the in-flight request finished on the graph it started with
        assert before["generation"] == 1 and before["answers"] == ["Satoshi Kon"]
        assert after["generation"] == 2
        assert sorted(after["answers"]) == sorted(["Satoshi Kon", NEW_DIRECTOR])
        # a broken folder does not replace a good graph
        (tmp_path / "g" / "tails.npy").write_bytes(b"not a numpy file")
        failed = client.post("/admin/reload")
        assert failed.status_code == 500 and "still serving" in failed.json()["detail"]
        still = client.post("/retrieve", json={"method": "ultrag", "query": QUERY}).json()
        assert still["generation"] == 2 and NEW_DIRECTOR in still["answers"]
        assert "GraphLoadError" in client.get("/health").json()["last_reload_error"]


class CountingEmbedder:
    """Wraps the session MiniLM and records every text embedded as a document."""

    def __init__(self, inner) -> None:
        self.inner, self.documents = inner, []

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_query(self, text):
        return self.inner.embed_query(text)

    def embed_documents(self, texts):
        self.documents.extend(texts)
        return self.inner.embed_documents(texts)


def test_methods_are_built_before_the_first_request(serve, minilm, tmp_path):
    """Start-up embeds the graph's names (once) and builds the indexes; requests embed none --
    on MetaQA the first requests of a worker otherwise each embedded 43k names (issue 18)."""
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    graph = load_graph(tmp_path / "g")
    embedder = CountingEmbedder(minilm)
    config = serve.ServeConfig(graph=str(tmp_path / "g"), methods=("byokg", "graphraft"),
                               watch_interval=0)
    with TestClient(serve.create_app(config, embedder=embedder)) as client:
        at_start = list(embedder.documents)
        # every name embedded once, for both methods (one shared set of vectors)
        assert sorted(n for n in at_start if n in set(graph.node_names)) == sorted(graph.node_names)
        bundle = client.app.state.holder.bundle
        assert bundle.methods["byokg"].linker._dense is not None  # FAISS index built
        assert bundle.methods["graphraft"].linker._dense is bundle.methods["byokg"].linker._dense
        for question in ["Who directed Paprika?", "Where was the director of Tokyo Godfathers "
                         "born?", "Which films did Satoshi Kon direct?"]:
            for method in ("byokg", "graphraft"):
                reply = client.post("/retrieve", json={"method": method, "question": question})
                assert reply.status_code == 200, reply.text
        assert not set(embedder.documents[len(at_start):]) & set(graph.node_names)


def test_a_worker_runs_at_most_max_concurrency_retrievals(serve, tmp_path):
    """Requests beyond ``max_concurrency`` wait in the event loop; all of them are answered."""
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    config = serve.ServeConfig(graph=str(tmp_path / "g"), methods=("ultrag",), watch_interval=0,
                               max_concurrency=1, test_hooks=True)
    with TestClient(serve.create_app(config)) as client:
        body = {"method": "ultrag", "query": QUERY, "delay_ms": 400}
        with ThreadPoolExecutor(3) as pool:
            replies = [pool.submit(client.post, "/retrieve", json=body) for _ in range(3)]
            seen = []
            while not all(r.done() for r in replies):
                health = client.get("/health").json()
                seen.append((health["in_flight"], health["waiting"]))
                time.sleep(0.02)
            assert all(r.result().status_code == 200 for r in replies)
        assert max(running for running, _ in seen) == 1
        assert max(waiting for _, waiting in seen) >= 1
        assert client.get("/health").json()["served"] == 3
    with pytest.raises(ValueError, match="max_concurrency"):
        serve.ServeConfig(graph="g", max_concurrency=0)


# ---------------------------------------------------------------------------- the real server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port: int, path: str, body: dict | None = None, timeout: float = 10) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        assert resp.status == 200
        return json.loads(resp.read())


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def in_flight(markers: Path) -> None:
    """Wait until a worker has started a delayed request: with ``--test-hooks`` it touches a
    file in ``KGRAG_SERVE_TEST_MARKERS``. (Asking ``/health`` is not enough: the kernel may hand
    every new connection to the idle worker, which never sees the busy one's request.)"""
    count = len(list(markers.iterdir()))
    wait_for(lambda: len(list(markers.iterdir())) > count, 20, "the request to arrive")


@pytest.mark.timeout(90)
def test_the_service_runs_with_workers_reloads_and_drains_on_sigterm(tmp_path):
    graph = tmp_path / "g"
    save_movies(graph)
    port = free_port()
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {**os.environ, "KGRAG_SERVE_TEST_MARKERS": str(markers),
           "PYTHONPATH": os.pathsep.join(
               [str(ROOT / "shared"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(graph), "--port", str(port), "--workers", "2",
         "--methods", "ultrag", "--watch-interval", "0.2", "--test-hooks",
         "--graceful-timeout", "20", "--log-level", "warning"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)  # its own process group: the workers can be cleaned up too
    try:
        health = wait_for(lambda: call(port, "/health"), 60, "the server to start")
        assert health["generation"] == 1 and health["mmap"] is True
        pids = wait_for(lambda: len({call(port, "/health")["pid"] for _ in range(20)}) == 2,
                        30, "both workers to answer")
        assert pids

        # reload under load: clients keep asking while a new graph is saved over the old one
        stop = threading.Event()
        outcomes: list = []

        def client() -> None:
            while not stop.is_set():
                try:
                    outcomes.append(call(port, "/retrieve", {"method": "ultrag", "query": QUERY}))
                except Exception as exc:  # any failure is recorded and fails the test below
                    outcomes.append(exc)

        with ThreadPoolExecutor(5) as pool:
            slow = pool.submit(call, port, "/retrieve",
                               {"method": "ultrag", "query": QUERY, "delay_ms": 2000})
            in_flight(markers)  # the slow request now runs on the old graph
            clients = [pool.submit(client) for _ in range(4)]
            save_movies(graph, extra=True)
            seen = wait_for(lambda: {r["pid"] for r in outcomes[-40:] if isinstance(r, dict)
                                     and r["generation"] == 2} or None, 20,
                            "the workers to reload")
            wait_for(lambda: len({r["pid"] for r in outcomes[-200:] if isinstance(r, dict)
                                  and r["generation"] == 2} | seen) == 2, 20,
                     "both workers to serve the new graph")
            wait_for(lambda: len(outcomes) >= 20, 20, "more requests")
            stop.set()
            for c in clients:
                c.result()
            before = slow.result()
        errors = [o for o in outcomes if not isinstance(o, dict)]
        assert errors == [] and len(outcomes) > 20
        assert before["generation"] == 1 and before["answers"] == ["Satoshi Kon"]
        for r in outcomes:
            expected = ["Satoshi Kon"] if r["generation"] == 1 else ["Satoshi Kon", NEW_DIRECTOR]
            assert sorted(r["answers"]) == sorted(expected)

        # graceful shutdown: a request in flight at SIGTERM still gets its answer
        with ThreadPoolExecutor(1) as pool:
            draining = pool.submit(call, port, "/retrieve",
                                   {"method": "ultrag", "query": QUERY, "delay_ms": 1500})
            in_flight(markers)
            proc.send_signal(signal.SIGTERM)
            answer = draining.result()
        assert answer["generation"] == 2 and NEW_DIRECTOR in answer["answers"]
        assert proc.wait(timeout=30) == 0
        with pytest.raises(OSError):
            call(port, "/health", timeout=2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the supervisor and its workers
        log = proc.communicate(timeout=30)[0]
        print(log)
    assert "Traceback" not in log, log


# ---------------------------------------------------------------------------- hostile requests
@pytest.mark.parametrize("body", [
    b'{"method": "ultrag", "query": "\\"Tokyo Godfathers\\" -> directed_by", "top_k": NaN}',
    b'{"method": "ultrag", "query": "\\"Tokyo Godfathers\\" -> directed_by", "top_k": Infinity}',
    b'{"method": "ultrag", "query": "\\"\\ud800\\" -> directed_by"}',
    b'{"method": "\\udfff", "query": "x"}',
    b'{"method": "byokg", "question": "who directed \\ud83d?"}',
    b'{"method": "ultrag", "query": "' + b"x" * 20_000 + b'"}',
    b'{"method": "ultrag", "query": "\\"Tokyo Godfathers\\" -> directed_by",',
    b'[' * 5_000 + b']' * 5_000,
], ids=["nan", "infinity", "surrogate-query", "surrogate-method", "surrogate-question",
        "long-query", "truncated-json", "deep-json"])
def test_hostile_bodies_get_a_short_4xx_not_a_500(serve, tmp_path, body):
    """Issue 30 item 8: FastAPI's default 422 repeats the input (NaN and lone surrogates cannot
    be written back: 500) and grows with it."""
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    config = serve.ServeConfig(graph=str(tmp_path / "g"), methods=("ultrag",), watch_interval=0)
    with TestClient(serve.create_app(config), raise_server_exceptions=False) as client:
        reply = client.post("/retrieve", content=body,
                            headers={"content-type": "application/json"})
        assert 400 <= reply.status_code < 500, reply.text[:300]
        assert len(reply.content) < 2_000 and b"xxxxxxxx" not in reply.content
        assert reply.json()["detail"]
        # the service still answers
        assert client.post("/retrieve", json={"method": "ultrag", "query": QUERY}
                           ).json()["answers"] == ["Satoshi Kon"]


def test_a_body_over_the_limit_is_413(serve, tmp_path):
    from fastapi.testclient import TestClient

    save_movies(tmp_path / "g")
    config = serve.ServeConfig(graph=str(tmp_path / "g"), methods=("ultrag",), watch_interval=0,
                               max_body_bytes=4096)
    with TestClient(serve.create_app(config)) as client:
        big = json.dumps({"method": "ultrag", "query": QUERY, "question": "y" * 5000})
        reply = client.post("/retrieve", content=big, headers={"content-type": "application/json"})
        assert reply.status_code == 413 and "4096 bytes" in reply.json()["detail"]
        assert client.post("/retrieve", json={"method": "ultrag",
                                              "query": QUERY}).status_code == 200
    with pytest.raises(ValueError, match="max_body_bytes"):
        serve.ServeConfig(graph="g", max_body_bytes=10)


def _status_line(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0]


@pytest.mark.timeout(90)
def test_the_real_server_refuses_huge_bodies_before_reading_them(tmp_path):
    """uvicorn on loopback: a declared 50 MB body is refused before one byte of it is sent; a
    streamed (chunked) 40 MB body is refused once it passes the limit, while the client is
    still sending (the worker read it all, and answered with a copy of it, before)."""
    import select

    graph = tmp_path / "g"
    save_movies(graph)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "shared"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(graph), "--port", str(port), "--workers", "1",
         "--methods", "ultrag", "--watch-interval", "0", "--log-level", "warning"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    head = (f"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\n").encode()
    try:
        wait_for(lambda: call(port, "/health"), 60, "the server to start")
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head + b"Content-Length: 50000000\r\n\r\n")  # and no body at all
            assert _status_line(sock, 10).startswith(b"HTTP/1.1 413")

        sent, status = 0, b""
        chunk = b"x" * (1 << 20)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n")
            prefix = b'{"method": "ultrag", "query": "'
            sock.sendall(b"%x\r\n" % len(prefix) + prefix + b"\r\n")
            try:
                for _ in range(40):
                    sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                    sent += len(chunk)
                    if select.select([sock], [], [], 0)[0]:  # the server has answered
                        break
                else:
                    sock.sendall(b'%x\r\n"}\r\n0\r\n\r\n' % 2)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server closed the connection after its answer
            try:
                status = _status_line(sock, 30)
            except (ConnectionResetError, socket.timeout):
                status = b""
        assert status.startswith(b"HTTP/1.1 413"), status
        assert sent < 40 * len(chunk)
        assert call(port, "/retrieve", {"method": "ultrag", "query": QUERY})["answers"] == \
            ["Satoshi Kon"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        print(proc.communicate(timeout=30)[0])
