"""The front door and the docs say what the code does: the README fits a screen and links pages
that exist, the configuration page is what the settings model and the command line generate, the
README's commands that need no broker run and print what it shows (test_snippets parses every
command and code block), and the subscribers' page names every part of the output contract."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from doc_blocks import JOB_SCRIPTS, PAGES, README, ROOT, blocks, console_commands, texts

from alertsieve.cli import build_parser, main
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


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation gone, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_to_a_section_finds_its_heading():
    """``page.md#section`` and ``#section`` in a page or a notebook's markdown: the page has a
    heading of that anchor."""
    anchors = {
        page.name: {_anchor(h) for h in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}
        for page in PAGES
    }
    broken, links = [], 0
    for where, text in texts():
        for target, section in re.findall(r"\]\(([^)#:]*\.md)?#([^)]+)\)", text):
            links += 1
            name = Path(target).name if target else where
            if section not in anchors.get(name, {section}):
                broken.append(f"{where}: {target}#{section}")
    assert broken == []
    assert links > 20  # not vacuous


#: Where a path a page names in code (`notebooks/...`) lives in a checkout.
FOLDERS = ("notebooks/", "docs/", "filters/", "jobs/", "conf/", "alertsieve/", "tests/", "schemas/")
FOLDERS += ("models/", "docker/", ".ci/")


def test_every_path_a_page_names_exists_in_a_checkout():
    """A file or folder a page names in code (`notebooks/03_write_a_filter.ipynb`) is there; a
    pattern or placeholder (`*`, `<...>`, `NAME`) is not a path."""
    folders = "|".join(map(re.escape, FOLDERS))
    named = re.compile(rf"`((?:{folders})[^`\s]*)`")
    missing, found = [], 0
    for where, text in texts():
        for match in named.finditer(text):
            path = match.group(1).rstrip(".,:;)").split("::")[0].split("#")[0]
            if any(c in path for c in "*<>{}[]") or "NAME" in path or "..." in path:
                continue
            found += 1
            if not (ROOT / path).exists():
                missing.append(f"{where}: {path}")
    assert missing == []
    assert found > 100  # not vacuous


#: Words of a log, not of a page for its reader: where and when a run was (that is benchmarks.md's).
LOG_WORDS = ("these machines", "these two cores", "this machine (", "(run here", "before).")


def test_pages_speak_to_their_reader_not_of_the_runs_behind_them():
    said = [
        f"{where}: {words!r}"
        for where, text in texts()
        if not where.startswith("benchmarks")
        for words in LOG_WORDS
        if words in text
    ]
    assert said == []


#: A measured rate or latency: docs/benchmarks.md states each with its machine and run.
MEASURED = re.compile(
    r"\d[\d,.]*\s*(?:-\s*[\d,.]+\s*)?(?:alerts/s|alerts a second|records/s|keys a second|MB/s"
    r"|GB/s|ms\b|x faster|times faster|times smaller)"
)


def measured_figures(where: str, text: str) -> list[str]:
    """The measured figures ``text``'s prose states (its fenced blocks, real output, left out);
    a setting's value, written after "default", is not one."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [
        f"{where}: {prose[max(0, m.start() - 40) : m.end()]!r}"
        for m in MEASURED.finditer(prose)
        if "default" not in prose[max(0, m.start() - 12) : m.start()]
    ]


def test_measured_figures_stand_in_benchmarks_md_alone():
    """Every page but benchmarks.md links to it for a rate or a latency, so no two pages give two
    figures for one thing (configuration.md is the settings' own page, generated)."""
    assert measured_figures("a.md", "p50 922 ms; a default 0.5 ms a cap") == ["a.md: 'p50 922 ms'"]
    assert measured_figures("a.md", "```console\n1485 alerts/s\n```") == []
    found = [
        figure
        for where, text in texts()
        if not where.startswith(("benchmarks", "configuration"))
        for figure in measured_figures(where, text)
    ]
    assert found == []


def test_commands_a_block_shows_as_the_same_job_are_the_same_job():
    """`alertsieve filter ...` beside `spark-submit jobs/filter_stream.py ...` in one block parse
    to the same settings (a spark-submit line once dropped three of the flags)."""
    pairs = 0
    for page in PAGES:
        for block in blocks("console", page.read_text()):
            ways = {}
            for command, _ in console_commands(f"```console\n{block}```"):
                tokens = shlex.split(command, comments=True)
                script = next((i for i, t in enumerate(tokens) if t in JOB_SCRIPTS), None)
                if script is not None and JOB_SCRIPTS[tokens[script]] == "filter":
                    ways["spark-submit"] = tokens[script + 1 :]
                elif _subcommand(tokens) and _subcommand(tokens)[0] == "filter":
                    ways["alertsieve"] = tokens[2:]
            if len(ways) == 2:
                pairs += 1
                submit, command = (
                    vars(build_parser().parse_args(["filter", *ways[k]]))
                    for k in ("spark-submit", "alertsieve")
                )
                assert submit == command, f"{page.name}: {block}"
    assert pairs >= 2  # the README's and architecture.md's


def test_the_model_example_converts_a_forest_its_predict_line_reads(tmp_path, monkeypatch):
    """models.md's conversion, run as shown, makes a graph that its ``predict`` line feeds and
    reads: the probabilities scikit-learn's forest gives (to float32)."""
    import numpy as np
    import onnxruntime

    text = (ROOT / "docs" / "models.md").read_text()
    conversion = next(b for b in blocks("python", text) if "to_onnx(" in b)
    predict = re.search(r"return (session\.run\(.*\)\[1\]\[:, 1\])", text).group(1)
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(conversion, "models.md", "exec"), names)
    session = onnxruntime.InferenceSession("my_model.onnx")
    x = names["features"][:50]
    got = eval(predict, {"session": session, "x": x, "np": np})
    want = names["forest"].predict_proba(x)[:, 1]
    assert np.allclose(got, want, atol=1e-6) and 0 < want.sum() < len(want)


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
