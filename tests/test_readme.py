"""The README's examples are true: every snippet and command in it runs.

``README.md`` is parsed into its fenced blocks:

* every ```` ```python ```` block runs on its own in a fresh interpreter (offline, with a
  timeout, from an empty temporary folder: a snippet must define and import what it uses);
* every line of a ```` ```bash ```` block runs as the shell would run it, in order, from a
  temporary folder that mirrors the checkout (so files a command writes land there); the
  ``kgrag`` lines run through :func:`kgrag.cli.main`, the entry point of the ``kgrag``
  script. Only the lines in :data:`SKIP` are not run, each for the reason given;
* every ```` ```console ```` transcript (``$ kgrag ...`` then its output) is run and its
  output compared line by line;
* every README-relative link (``docs/x.md#anchor``) points at a file, and at a heading of it.
  ``pyproject.toml`` names no project URL, so the links stay relative to the checkout (the
  package index page cannot resolve them; an absolute base would be the fix once there is one).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgrag import cli

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

#: README lines not run here, by the start of the line, with the reason.
SKIP: dict[str, str] = {
    "bash scripts/demo.sh": "setup: creates .venv from the package registries, then runs "
                            "kgrag demo (run below)",
    "bash scripts/test.sh": "setup: creates .venv and runs the whole suite, this test included",
    "kgrag eval --method simgrag --dataset metaqa-2hop": "needs the MetaQA dataset in "
        "../shared/data and embeds its 43k entity names (minutes); kgrag eval runs on samples "
        "in tests/test_eval_runner.py",
    "kgrag load-db ": "needs a running FalkorDB server (load-db against a real server: "
                      "tests/test_graph_db.py)",
    "pip install torch --index-url": "installs PyTorch's CPU build from PyTorch's index (what "
                                     "scripts/setup.sh does with the local torch==2.13.0)",
    "pip install 'kgrag[all]'": "installs packages (what scripts/setup.sh does; the extras are "
                                "checked in tests/test_extras.py)",
}
#: What a fenced block may be labelled; an unlabelled block could hide an untested command.
LANGUAGES = {"python", "bash", "console", "text", "json"}
PYTHON_TIMEOUT_S = 600  # a shared 2-core machine; the snippets take 10-30 s each when idle


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int  # of the opening fence, 1-based

    def commands(self) -> list[tuple[int, str]]:
        """``(line number, text)`` of the non-blank, non-comment lines."""
        return [(self.line + i, text.strip()) for i, text in enumerate(self.code.splitlines(), 1)
                if text.strip() and not text.strip().startswith("#")]


def fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    language, start, body = None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if language is None:
                language, start, body = line[3:].strip(), number, []
            else:
                blocks.append(Block(language, "\n".join(body) + "\n", start))
                language = None
        elif language is not None:
            body.append(line)
    assert language is None, f"README.md:{start}: unclosed code block"
    return blocks


BLOCKS = fenced_blocks(README.read_text(encoding="utf-8"))
PYTHON = [b for b in BLOCKS if b.language == "python"]
BASH = [b for b in BLOCKS if b.language == "bash"]
CONSOLE = [b for b in BLOCKS if b.language == "console"]
LINES = [(block, number, text) for block in BASH for number, text in block.commands()]


def skip_reason(text: str) -> str | None:
    return next((reason for start, reason in SKIP.items() if text.startswith(start)), None)


def test_the_parser_finds_the_blocks():
    blocks = fenced_blocks("a\n```python\nx = 1\n```\n\n```bash\nkgrag demo  # hi\n# c\n```\n")
    assert [(b.language, b.line) for b in blocks] == [("python", 2), ("bash", 6)]
    assert blocks[1].commands() == [(7, "kgrag demo  # hi")]
    assert PYTHON and BASH and CONSOLE  # the README has all three kinds


def test_every_block_says_its_language():
    for block in BLOCKS:
        assert block.language in LANGUAGES, f"README.md:{block.line}: ```{block.language}"
        if block.language in ("text", "json"):
            assert not re.search(r"^\s*\$?\s*kgrag ", block.code, re.MULTILINE), \
                f"README.md:{block.line}: a kgrag command in a block that is not run"


def test_the_skip_list_names_readme_lines():
    """Each entry matches exactly one README line (a stale entry would skip nothing)."""
    for start in SKIP:
        assert sum(text.startswith(start) for _, _, text in LINES) == 1, start


def test_the_readme_shows_the_version_command():
    assert any(text == "kgrag --version" for _, _, text in LINES)


# ---------------------------------------------------------------------- python snippets
def _offline_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "shared"), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # the snippets must not need one
        env.pop(key, None)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("block", PYTHON, ids=[f"README.md:{b.line}" for b in PYTHON])
def test_python_snippet_runs(block, tmp_path):
    done = subprocess.run([sys.executable, "-c", block.code], cwd=tmp_path, env=_offline_env(),
                          capture_output=True, text=True, timeout=PYTHON_TIMEOUT_S)
    assert done.returncode == 0, (f"README.md:{block.line} failed:\n{done.stdout[-2000:]}\n"
                                  f"{done.stderr[-4000:]}")


# ---------------------------------------------------------------------- shell commands
@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A folder mirroring the checkout's top level (links), so README paths resolve and the
    files commands write (an index, a drawing) stay out of the checkout."""
    folder = tmp_path_factory.mktemp("readme-commands")
    for entry in REPO.iterdir():
        if not entry.name.startswith("."):
            (folder / entry.name).symlink_to(entry)
    return folder


_ran: dict[tuple[int, int], tuple[int, str, str]] = {}


def run_kgrag(argv: list[str], capsys) -> tuple[int, str, str]:
    """``kgrag argv`` through the console script's entry point: (status, stdout, stderr)."""
    capsys.readouterr()
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # --version, --help and argparse's own errors exit
        status = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    out, err = capsys.readouterr()
    return status, out, err


def _run_line(block: Block, number: int, text: str, capsys) -> tuple[int, str, str]:
    """Run one README line once (memoised), after the lines before it in its block, as a shell
    running the block would."""
    for earlier, earlier_text in block.commands():
        if earlier >= number:
            break
        if (block.line, earlier) not in _ran and skip_reason(earlier_text) is None:
            _run_line(block, earlier, earlier_text, capsys)
    if (block.line, number) not in _ran:
        argv = shlex.split(text, comments=True)
        assert argv[0] == "kgrag", f"README.md:{number}: not a kgrag command: {text}"
        _ran[(block.line, number)] = run_kgrag(argv[1:], capsys)
    return _ran[(block.line, number)]


@pytest.mark.slow
@pytest.mark.parametrize("block, number, text", LINES, ids=[f"README.md:{n}" for _, n, _ in LINES])
def test_shell_command_runs(block, number, text, workdir, capsys, monkeypatch, minilm):
    reason = skip_reason(text)
    if reason is not None:
        pytest.skip(reason)
    monkeypatch.chdir(workdir)
    status, out, err = _run_line(block, number, text, capsys)
    assert status == 0, f"README.md:{number}: {text}\n{err[-3000:]}"
    assert out.strip(), f"README.md:{number} printed nothing"
    assert ": error:" not in err


@pytest.mark.slow
@pytest.mark.parametrize("block", CONSOLE, ids=[f"README.md:{b.line}" for b in CONSOLE])
def test_console_transcript_is_what_the_command_prints(block, workdir, capsys, monkeypatch):
    monkeypatch.chdir(workdir)
    commands: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"README.md:{block.line}: output before the first $ command"
            commands[-1][1].append(line)
    for command, expected in commands:
        argv = shlex.split(command)
        assert argv[0] == "kgrag"
        status, out, err = run_kgrag(argv[1:], capsys)
        assert status == 0, err
        assert out.splitlines() == expected, command


# ---------------------------------------------------------------------- links
def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = unicodedata.normalize("NFC", heading.strip().lower())
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#+\s+(.*?)\s*#*\s*$", path.read_text(encoding="utf-8"),
                          re.MULTILINE)
    return {github_slug(h) for h in headings}


def test_github_slug():
    assert github_slug("Scale: 10M edges, k(n) = 16384, k(r) = 512") == \
        "scale-10m-edges-kn--16384-kr--512"
    assert github_slug("Incomplete graphs: neural vs symbolic") == \
        "incomplete-graphs-neural-vs-symbolic"


def test_relative_links_resolve():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert relative  # the README links to its docs
    for link in relative:
        target, _, anchor = link.partition("#")
        path = REPO / target if target else README
        assert path.exists(), f"README link to a missing file: {link}"
        if anchor:
            assert path.suffix == ".md", link
            assert anchor in _anchors(path), f"README link to a missing heading: {link}"
