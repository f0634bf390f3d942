"""The front door and the docs say what the code does: the README fits a screen and links pages
that exist, the configuration page is what the settings model and the command line generate, the
README's commands that need no broker run and print what it shows (test_snippets parses every
command and code block), and the subscribers' page names every part of the output contract."""

from __future__ import annotations

import re
import shlex

import pytest
from doc_blocks import JOB_SCRIPTS, PAGES, README, ROOT, console_commands

from alertsieve.cli import main
from alertsieve.configuration_doc import configuration_markdown
from alertsieve.publish import contract


def _subcommand(tokens: list[str]) -> list[str] | None:
    """The alertsieve command a console line runs, or None."""
    if tokens and (tokens[0].endswith("/alertsieve") or tokens[0] == "alertsieve"):
        return tokens[1:3]
    script = next((t for t in tokens[:3] if t in JOB_SCRIPTS), None)
    return [JOB_SCRIPTS[script]] if script else None


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


def _runnable() -> list[tuple[str, str]]:
    """The README's alertsieve commands that need no broker: backtests and checks on files."""
    out = []
    for command, shown in console_commands(README.read_text()):
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
