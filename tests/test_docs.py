"""The front door and the docs say what the code does: the README fits a screen and links pages
that exist, the configuration page is what the settings model and the command line generate, the
README's commands that need no broker run and print what it shows, every flag any command in
the README or docs uses exists, and the subscribers' page names every part of the output contract."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from alertsieve.cli import build_parser, main
from alertsieve.configuration_doc import configuration_markdown
from alertsieve.publish import contract

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
#: Programs in console blocks and the alertsieve command they are.
JOB_SCRIPTS = {"jobs/filter_stream.py": "filter", "jobs/produce_alerts.py": "produce"}


def console_commands(page: Path) -> list[tuple[str, str]]:
    """(command, the output shown under it) of every ``$ `` line of the page's console blocks;
    a line ending in a backslash continues on the next."""
    out: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", page.read_text(), re.S):
        lines, i = block.rstrip("\n").split("\n"), 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            command = lines[i][2:]
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            shown = []
            while i + 1 < len(lines) and not lines[i + 1].startswith("$ "):
                i += 1
                shown.append(lines[i])
            out.append((command, "\n".join(shown)))
            i += 1
    return out


def _subcommand(tokens: list[str]) -> list[str] | None:
    """The alertsieve command a console line runs with the word after it (['filter', '--topic'],
    ['filters', 'diff'], ...), or None."""
    if tokens and (tokens[0].endswith("/alertsieve") or tokens[0] == "alertsieve"):
        return tokens[1:3]
    script = next((t for t in tokens[:3] if t in JOB_SCRIPTS), None)
    return [JOB_SCRIPTS[script]] if script else None


def _options(words: list[str]) -> set[str]:
    """The flags of the command ``words`` name, down to its sub-command where it has them
    (``filters diff``, ``bench soak``)."""
    parser = build_parser()
    for word in words:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        parser = sub.choices[word]
    return {s for action in parser._actions for s in action.option_strings}


def test_readme_fits_a_screen_and_links_pages_that_exist():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for page in ("architecture", "configuration", "alerts", "reliability", "benchmarks"):
        assert (ROOT / "docs" / f"{page}.md").is_file()
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+\.md)", page.read_text()):
            assert (page.parent / target).is_file(), f"{page.name} links {target}"


def test_the_configuration_page_is_what_the_code_generates():
    assert (ROOT / "docs" / "configuration.md").read_text() == configuration_markdown(), (
        "run: .venv/bin/python -m alertsieve.configuration_doc > docs/configuration.md"
    )


def test_every_flag_in_the_readme_and_docs_exists():
    checked = 0
    for page in PAGES:
        for command, _ in console_commands(page):
            tokens = [t.strip("[]") for t in shlex.split(command, comments=True)]
            sub = _subcommand(tokens)
            if not sub:
                continue
            known = _options(sub)
            for flag in (t.split("=")[0] for t in tokens if t.startswith("--")):
                assert flag in known, f"{page.name}: {command}: alertsieve {sub[0]} has no {flag}"
                checked += 1
    assert checked > 50  # not vacuous: the pages' commands were found


def _runnable() -> list[tuple[str, str]]:
    """The README's alertsieve commands that need no broker: backtests and checks on files."""
    out = []
    for command, shown in console_commands(README):
        tokens = shlex.split(command, comments=True)
        if (
            _subcommand(tokens)
            and "--bootstrap" not in tokens
            and tokens[1] in ("backtest", "filters", "schemas")
        ):
            out.append((command, shown))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("command", "shown"), _runnable())
def test_the_readme_commands_that_need_no_broker_print_what_it_shows(
    command, shown, spark, capsys, monkeypatch, tmp_path
):
    """Run as the README says, in this process on the tests' session (the check is the command's
    output; the console script itself is run by test_wheel and the demo's): from a folder like the
    checkout's top, with the files the README asks its reader to save ("Save this as `PATH`:")."""
    for folder in ("tests", "filters", "models", "conf"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    saved = re.findall(r"Save this as `([^`]+)`:\s*```python\n(.*?)```", README.read_text(), re.S)
    assert saved  # the astronomer's filter
    for path, body in saved:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    monkeypatch.chdir(tmp_path)
    tokens = shlex.split(command, comments=True)
    assert tokens[0].endswith("alertsieve")
    assert main(tokens[1:]) == 0, capsys.readouterr().err[-2000:]
    assert capsys.readouterr().out.rstrip("\n") == shown


def test_the_subscribers_page_names_every_header_envelope_field_and_counts_field():
    page = (ROOT / "docs" / "subscribers.md").read_text()
    counts = (
        contract.KIND,
        contract.QUERY_ID,
        contract.BATCH_ID,
        contract.INPUT,
        contract.ALERTS_READ,
        contract.QUARANTINED,
        contract.FILTERS,
        contract.VERSION,
        contract.TOPIC,
        contract.PUBLISHED,
        contract.QUARANTINE_TOPIC,
        contract.WRITTEN_AT,
    )
    names = {*contract.MATCH_HEADERS, *contract.QUARANTINE_HEADERS, *contract.ENVELOPE, *counts}
    assert sorted(n for n in names if f"`{n}`" not in page and f'"{n}"' not in page) == []
