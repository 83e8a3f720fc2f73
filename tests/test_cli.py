"""The ``kgrag`` command line: info, link (fuzzy), demo, extension points and error handling."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from kgrag import __version__, cli, data
from kgrag.commands import COMMANDS, Command, demo
from kgrag.errors import GraphLoadError
from kgrag.graph import read_triples, save_graph

REPO = Path(__file__).resolve().parents[1]
MOVIES = REPO / "examples" / "data" / "movies.tsv"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def small_tsv(tmp_path) -> Path:
    path = tmp_path / "small.tsv"
    path.write_text("head\trelation\ttail\n"
                    "a\tr\tb\n"
                    "a\tr\tb\n"          # duplicate
                    "b\tloop\tb\n"       # self-loop
                    "b\tr\tc\n"
                    "broken line\n"      # malformed (line 6)
                    "c\ts\ta\n", encoding="utf-8")
    return path


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"kgrag {__version__}"


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


# ---------------------------------------------------------------------- info
def test_info_counts_stats_and_histogram(capsys, small_tsv):
    status, out, err = run(capsys, "info", str(small_tsv), "--on-error", "skip")
    assert status == 0  # the skipped line is counted below and said once on stderr
    assert err == f"kgrag: warning: skipped 1 malformed line(s) in {small_tsv}\n"
    assert out.splitlines() == [
        f"graph: {small_tsv}",
        "nodes: 3  edges: 4  relations: 3",
        "input triples: 5  duplicates dropped: 1  self-loops: 1  malformed lines skipped: 1",
        "relation histogram:",
        "  r     2",
        "  loop  1",
        "  s     1",
    ]


def test_info_top_limits_the_histogram(capsys, small_tsv):
    status, out, _ = run(capsys, "info", str(small_tsv), "--on-error", "skip", "--top", "1")
    assert status == 0
    assert out.splitlines()[-2:] == ["  r  2", "  ... and 2 more (use --top 0 for all)"]


def test_info_malformed_line_is_a_one_line_error(capsys, small_tsv):
    status, out, err = run(capsys, "info", str(small_tsv))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{small_tsv}:6" in err and err.startswith("kgrag info: error:")


def test_info_explicit_separator(capsys, tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("a;r;b\nb;r;c\n")
    status, out, _ = run(capsys, "info", str(path), "--sep", ";")
    assert status == 0 and "nodes: 3  edges: 2  relations: 1" in out
    tab = tmp_path / "t.txt"
    tab.write_text("a,b\tr\tc\n")
    status, out, _ = run(capsys, "info", str(tab), "--sep", "\\t")  # as typed in a shell
    assert status == 0 and "nodes: 2  edges: 1" in out
    status, out, _ = run(capsys, "info", str(tab), "--sep", "tab")
    assert status == 0 and "nodes: 2  edges: 1" in out
    broken = tmp_path / "b.txt"
    broken.write_text("a¦r¦b\nb¦r¦c\n", encoding="utf-8")
    status, out, _ = run(capsys, "info", str(broken), "--sep", "¦")
    assert status == 0 and "nodes: 3  edges: 2" in out


def test_info_on_a_saved_graph(capsys, tmp_path):
    kg = read_triples(MOVIES)
    save_graph(kg, tmp_path / "saved")
    status, out, _ = run(capsys, "info", str(tmp_path / "saved"), "--top", "0")
    assert status == 0
    assert f"nodes: {kg.num_nodes}  edges: {kg.num_edges}  relations: {kg.num_relations}" in out
    listed = [line.split() for line in out.splitlines() if line.startswith("  ")]
    assert [(name, int(count)) for name, count in listed] == kg.relation_histogram()


@pytest.mark.parametrize("target", ["missing.tsv", "corrupt"])
def test_info_missing_or_corrupted_graph(capsys, tmp_path, target):
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "manifest.json").write_text("{oops")
    status, out, err = run(capsys, "info", str(tmp_path / target))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(tmp_path / target) in err


# ---------------------------------------------------------------------- link
def links_of(out: str) -> dict[str, list[tuple[str, float, str]]]:
    """Parse the link output into mention -> [(name, score, source)]."""
    parsed: dict[str, list[tuple[str, float, str]]] = {}
    current = ""
    for line in out.splitlines():
        if not line.startswith("  "):
            current = line.rstrip(":").strip("'\"")
            parsed[current] = []
        elif line.strip() != "(no match)":
            rank_and_name, score, source = line.strip().rsplit(maxsplit=2)
            parsed[current].append((rank_and_name.split(". ", 1)[1].strip(), float(score), source))
    return parsed


def test_link_fuzzy(capsys):
    status, out, err = run(capsys, "link", str(MOVIES), "Jamaican people", "tokyo godfather",
                           "Satoshi Kon", "--mode", "fuzzy")
    assert status == 0 and err == ""
    found = links_of(out)
    assert list(found) == ["Jamaican people", "tokyo godfather", "Satoshi Kon"]
    assert all(len(links) == 3 for links in found.values())
    assert found["Jamaican people"][0][0] == "Jamaica"
    assert found["Jamaican people"][0][2] == "fuzzy"
    assert found["tokyo godfather"][0][0] == "Tokyo Godfathers"
    assert found["Satoshi Kon"][0] == ("Satoshi Kon", 1.0, "exact")
    scores = [score for _, score, _ in found["tokyo godfather"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


def test_link_top_k_and_relations(capsys):
    status, out, _ = run(capsys, "link", str(MOVIES), "Kurosawa", "--top-k", "1")
    assert status == 0
    (name, score, source), = links_of(out)["Kurosawa"]
    assert (name, source) == ("Akira Kurosawa", "fuzzy") and 0.5 < score < 1
    status, out, _ = run(capsys, "link", str(MOVIES), "director", "--relations", "--top-k", "2")
    assert status == 0
    assert [name for name, _, _ in links_of(out)["director"]] == ["directed_by", "starred_actors"]


def test_link_bad_arguments(capsys, tmp_path):
    status, _, err = run(capsys, "link", str(MOVIES), "x", "--top-k", "0")
    assert status == 2 and "--top-k" in err
    with pytest.raises(SystemExit) as info:
        cli.main(["link", str(MOVIES), "x", "--mode", "psychic"])
    assert info.value.code == 2
    capsys.readouterr()
    status, _, err = run(capsys, "link", str(tmp_path / "nothing.tsv"), "x")
    assert status == 2 and "nothing.tsv" in err


# ---------------------------------------------------------------------- demo
def test_demo_runs_offline_and_shows_each_step(capsys):
    status, out, err = run(capsys, "demo")
    assert status == 0 and err == ""
    titles = [line for line in out.splitlines() if line.startswith("== ")]
    # the core steps first, then every registered method step (demo_step_modules())
    assert titles == [f"== {i}. {step.title}" for i, step in enumerate(demo.demo_steps(), start=1)]
    assert len(titles) >= len(demo.CORE_STEPS)
    assert "directed_by -> ['Satoshi Kon']" in out
    assert "'Jamaican people'    -> Jamaica" in out
    assert ("Tokyo Godfathers -> directed_by -> Satoshi Kon -> born_in -> Sapporo "
            "-> located_in -> Hokkaido") in out
    assert "Satoshi Kon <- directed_by <- Paprika -> release_year -> 2006" in out
    shortest = out.split("Shortest path Satoshi Kon .. Bong Joon-ho")[1].splitlines()[1]
    assert shortest.strip().startswith("Satoshi Kon") and shortest.strip().endswith("Bong Joon-ho")


def test_demo_on_other_data_and_missing_data(capsys, tmp_path, monkeypatch):
    status, _, err = run(capsys, "demo", "--data", str(tmp_path / "none.tsv"))
    assert status == 2 and "none.tsv" in err and "Traceback" not in err
    monkeypatch.setenv(data.DEMO_DATA_ENV, str(tmp_path / "gone.tsv"))
    status, _, err = run(capsys, "demo")
    assert status == 2 and data.DEMO_DATA_ENV in err


def test_demo_data_path(monkeypatch, tmp_path):
    monkeypatch.delenv(data.DEMO_DATA_ENV, raising=False)
    assert data.demo_data_path() == MOVIES.resolve()
    assert data.demo_data_path().parent.name == "data"  # inside the package, not examples/
    other = tmp_path / "mine.tsv"
    other.write_text("a\tr\tb\n")
    monkeypatch.setenv(data.DEMO_DATA_ENV, str(other))
    assert data.demo_data_path() == other
    monkeypatch.delenv(data.DEMO_DATA_ENV)
    with pytest.raises(FileNotFoundError, match="KGRAG_DEMO_DATA"):
        data.demo_data_path("no-such-file.tsv")


def test_demo_steps_from_other_modules_run_after_the_core(capsys, monkeypatch):
    module = types.ModuleType("kgrag_test_demo_extension")

    def shout(ctx: demo.DemoContext) -> None:
        ctx.out(f"extension sees {ctx.kg.num_edges} edges and {ctx.state['question_entities']}")

    module.demo_steps = lambda: [demo.DemoStep("Extension step", shout)]
    module.register = lambda subparsers: subparsers.add_parser("shout")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr("kgrag.commands.COMMANDS",
                        [*COMMANDS, Command("shout", module.__name__, demo=True)])
    assert demo.demo_step_modules()[-1] == module.__name__  # after the methods' commands
    status, out, _ = run(capsys, "demo")
    assert status == 0
    n = len(demo.demo_steps())
    assert f"== {n}. Extension step" in out
    edges = read_triples(MOVIES).num_edges
    assert out.rstrip().endswith(f"extension sees {edges} edges and ['Tokyo Godfathers']")


# ---------------------------------------------------------------------- extension commands
def test_commands_from_other_modules(capsys, monkeypatch):
    module = types.ModuleType("kgrag_test_cli_extension")

    def register(subparsers):
        hello = subparsers.add_parser("hello")
        hello.add_argument("who")
        hello.set_defaults(func=lambda args: print(f"hello {args.who}"))
        broken = subparsers.add_parser("broken")
        broken.set_defaults(func=lambda args: (_ for _ in ()).throw(GraphLoadError("bad dir")))
        buggy = subparsers.add_parser("buggy")
        buggy.set_defaults(func=lambda args: 1 / 0)

    module.register = register
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr("kgrag.commands.COMMANDS",
                        [*COMMANDS, *(Command(name, module.__name__)
                                      for name in ("hello", "broken", "buggy"))])
    assert run(capsys, "hello", "world") == (0, "hello world\n", "")
    assert run(capsys, "broken") == (2, "", "kgrag broken: error: bad dir\n")
    with pytest.raises(ZeroDivisionError):  # programming errors are not hidden
        cli.main(["buggy"])
    # the registry names every command a module adds: one left out is an error, not a surprise
    monkeypatch.setattr("kgrag.commands.COMMANDS", [*COMMANDS, Command("hello", module.__name__)])
    with pytest.raises(RuntimeError, match=r"adds the commands \['broken', 'buggy', 'hello'\]"):
        cli.build_parser()
