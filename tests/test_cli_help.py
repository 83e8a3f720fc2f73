"""Every ``kgrag`` parser's ``--help`` reads as plain text: no Sphinx/RST markup, every argument
described, every subcommand listed with a line of help, required options marked.

The parsers are walked from the real argparse objects (:func:`kgrag.cli.build_parser`), so a
command added later (one more entry in ``kgrag.commands.COMMANDS``) is checked without touching
this file.
"""

from __future__ import annotations

import argparse
import re

import pytest

from kgrag import cli
from kgrag.commands import COMMANDS

#: RST / Sphinx constructs that mean a docstring leaked into --help: ``literal``, :role:`x`,
#: `interpreted text`, a literal-block "::" at a line end, ".. directive::", escaped "\ ".
MARKUP = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`|(?<![`'\w])`[^`\s][^`\n]*`(?!`)|::\s*$|"
                    r"^\s*\.\. [a-z-]+::|\\ ", re.MULTILINE)


def markup_leaks(text: str) -> list[str]:
    """The lines of ``text`` with RST markup in them."""
    return [line.strip() for line in text.splitlines() if MARKUP.search(line)]


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("kgrag",)):
    """``(path, parser)`` for ``parser`` and every subcommand parser below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, path + (name,))


PARSERS = dict(walk(cli.build_parser()))
IDS = [" ".join(path) for path in PARSERS]


def test_the_walk_reaches_every_command():
    """Not a fixed list: every command of the registry is among the parsers checked below (a
    silent walk would check nothing), in the registry's order, and nothing else is."""
    commands = [path[1] for path in PARSERS if len(path) == 2]
    assert commands == [command.name for command in COMMANDS]
    assert {"info", "link", "demo", "ask", "eval", "load-db", "simgrag"} <= set(commands)
    # one application layer: every command lives in the kgrag.commands package
    assert all(command.module.startswith("kgrag.commands.") for command in COMMANDS)
    nested = [path for path in PARSERS if len(path) > 2]
    assert nested, "subcommands of subcommands (ketrag index/ask) are walked too"


@pytest.mark.parametrize("text, leaks", [
    ("see ``kgrag simgrag GRAPH`` here", 1),
    ("drawn with :mod:`kgrag.viz`.", 1),
    ("a :py:class:`Foo`", 1),
    ("the `default` role", 1),
    ("Example::", 1),
    (".. note:: careful", 1),
    ("GraphRAFT's ``selector.jsonl``,\n``answer.jsonl``", 2),
    ("plain text: 'quoted', \"double\", a -> b, x::y, C:\\path", 0),
    ("--pattern '[(\"UNKNOWN film 1\", \"directed_by\", \"Satoshi Kon\")]'", 0),
])
def test_the_markup_check_finds_markup(text, leaks):
    assert len(markup_leaks(text)) == leaks


@pytest.mark.parametrize("path", PARSERS, ids=IDS)
def test_help_is_plain_text(path):
    parser = PARSERS[path]
    text = parser.format_help()
    assert markup_leaks(text) == [], f"{' '.join(path)} --help"
    assert "%(" not in text  # an unexpanded argparse placeholder


@pytest.mark.parametrize("path", PARSERS, ids=IDS)
def test_every_argument_has_help(path):
    parser = PARSERS[path]
    undocumented = [action.option_strings or [action.dest] for action in parser._actions
                    if not isinstance(action, argparse._SubParsersAction)
                    and not (action.help or "").strip()]
    assert undocumented == [], f"{' '.join(path)}: arguments without help"


@pytest.mark.parametrize("path", PARSERS, ids=IDS)
def test_every_subcommand_is_listed_with_help(path):
    parser = PARSERS[path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: (choice.help or "").strip()
                      for choice in action._choices_actions}
            assert set(listed) == set(action.choices), f"{' '.join(path)}: unlisted commands"
            assert all(listed.values()), f"{' '.join(path)}: commands without help: {listed}"


@pytest.mark.parametrize("path", [p for p in PARSERS if len(p) > 1],
                         ids=[i for p, i in zip(PARSERS, IDS) if len(p) > 1])
def test_every_command_has_a_description(path):
    assert (PARSERS[path].description or "").strip(), f"{' '.join(path)} has no description"


@pytest.mark.parametrize("path", PARSERS, ids=IDS)
def test_required_options_are_marked(path):
    """argparse-required options appear in the usage line without brackets and say so."""
    parser = PARSERS[path]
    usage = parser.format_usage()
    for action in parser._actions:
        if action.required and action.option_strings:
            option = action.option_strings[-1]
            assert f"[{option}" not in usage, (path, option)
            assert "required" in action.help, (path, option)


def test_eval_method_and_dataset_are_marked_required():
    """--list needs neither, so argparse cannot require them: the usage line and their help
    say they are required, and the handler checks (tests/test_cli_consistency.py)."""
    parser = PARSERS[("kgrag", "eval")]
    usage = " ".join(parser.format_usage().split())
    assert "--method METHOD (--dataset DATASET | --questions FILE" in usage
    assert "[--method" not in usage and "[--dataset" not in usage
    helps = {action.dest: action.help for action in parser._actions}
    assert helps["method"].startswith("required")
    assert helps["dataset"].startswith("required")


def test_help_keeps_example_lines_and_option_names_whole():
    """Examples are shown one per line, and no option name is broken at its hyphen."""
    for path, parser in PARSERS.items():
        text = parser.format_help()
        assert not re.search(r"--[a-z]+-\n", text), path
        if parser.epilog and "examples:" in parser.epilog:
            shown = text.split("examples:\n", 1)[1].splitlines()
            assert shown and all(line.startswith("  kgrag ") or line.startswith("  NEO4J")
                                 or not line.startswith("  ") for line in shown), path
            assert any(line.startswith("  ") and "kgrag " in line for line in shown), path


def test_help_of_each_command_runs(capsys):
    """``kgrag ... --help`` itself (argparse prints and exits 0) for every parser."""
    for path in PARSERS:
        with pytest.raises(SystemExit) as info:
            cli.main([*path[1:], "--help"])
        assert info.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: {' '.join(path)}"), path
