"""Every snippet true when copied: each command of the README, docs/ and the notebooks' text is
parsed by the parser it would meet (alertsieve's, the job scripts', the Makefile's targets, pip's
extras), each Python block compiles, each block that defines filters loads beside the
contributed ones and passes `alertsieve filters check`, and each YAML and JSON block parses.
Programs of other projects (docker, kubectl, promtool, ...) are named in OTHER_PROGRAMS: their
lines are split like a shell would and no further."""

from __future__ import annotations

import argparse
import ast
import json
import re
import shlex

import pytest
import yaml
from doc_blocks import JOB_SCRIPTS, ROOT, blocks, console_commands, texts

from alertsieve.cli import build_parser, main

OTHER_PROGRAMS = {"docker", "kubectl", "helm", "promtool", "prometheus", "curl", "mkdir", "cat"}
OTHER_PROGRAMS |= {"cd", "ls", "git", "python", "python3", "jupyter", "java", "sudo", "apt-get"}


def _blocks(language: str) -> list[tuple[str, str]]:
    """(where, body) of every fenced block in ``language``, in every page and notebook."""
    return [(where, body) for where, text in texts() for body in blocks(language, text)]


def _commands() -> list[tuple[str, str]]:
    """(where, command) of every console block's ``$ `` lines."""
    return [(where, c) for where, text in texts() for c, _ in console_commands(text)]


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def _extras() -> set[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def _parse_alertsieve(args: list[str]) -> str | None:
    """Why ``alertsieve ARGS`` would not parse, or None."""
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(args)
    except SystemExit as e:
        if e.code:
            return err.getvalue().strip().splitlines()[-1]
    return None


def _unbracket(token: str) -> str:
    """``[--data-dir``, ``D]`` as typed; ``alertsieve[tom]`` left whole."""
    token = token.removeprefix("[")
    return token if "[" in token else token.removesuffix("]")


def problem(command: str) -> str | None:
    """Why ``command`` would fail to parse as shown, or None."""
    # A usage line's optional parts ([--purge]) and elisions (...) are shown, not typed.
    tokens = [_unbracket(t) for t in shlex.split(command, comments=True) if t != "..."]
    while tokens and re.match(r"^[A-Z_]+=", tokens[0]):  # VAR=value before the program
        tokens = tokens[1:]
    program = tokens[0]
    at = next((i for i, t in enumerate(tokens) if t.endswith(tuple(JOB_SCRIPTS))), None)
    if (
        at is not None
    ):  # spark-submit [its options] jobs/X.py, local:///.../jobs/X.py, python jobs/X.py
        script = next(s for s in JOB_SCRIPTS if tokens[at].endswith(s))
        return _parse_alertsieve([JOB_SCRIPTS[script], *tokens[at + 1 :]])
    if program.endswith("alertsieve"):
        return _parse_alertsieve(tokens[1:])
    if program == "make":
        missing = [t for t in tokens[1:] if t not in _makefile_targets()]
        return f"no make target {missing[0]}" if missing else None
    if program.endswith("pip") or tokens[1:3] == ["-m", "pip"]:
        named = {e for t in tokens for e in re.findall(r"alertsieve\[([\w,]+)\]", t)}
        unknown = {e for group in named for e in group.split(",")} - _extras()
        if any(re.fullmatch(r"alertsieve(\[[\w,]+\])?", t) for t in tokens):
            return "alertsieve is not on PyPI: install its wheel (alertsieve @ file://...) or a checkout"
        return f"no extra {sorted(unknown)}" if unknown else None
    if program.split("/")[-1] in OTHER_PROGRAMS:
        return None
    return f"{program}: a program this test does not know (add it to OTHER_PROGRAMS)"


def test_every_command_shown_parses():
    found = _commands()
    failures = [f"{where}: {c}: {p}" for where, c in found if (p := problem(c))]
    assert failures == []
    assert len(found) > 50  # not vacuous: the pages' commands were found


def _parsers(parser: argparse.ArgumentParser, name: str = "alertsieve"):
    """(command, parser) of ``parser`` and of every command under it."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _parsers(child, f"{name} {sub}")


def test_every_command_takes_several_kafka_settings_after_one_flag():
    """``--kafka-conf security.protocol=SASL_SSL sasl.password=env:PW``, as the pages write it,
    wherever a command takes Kafka settings (the job once took one a flag: "unrecognized
    arguments"); the job's other KEY=VALUE flags (``--quota``...) the same way."""
    takers = {}
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.metavar == "KEY=VALUE":
                takers.setdefault(name, []).append(action.option_strings[0])
                assert isinstance(action, argparse._ExtendAction), (name, action.option_strings)
                assert action.nargs == "+", (name, action.option_strings)
    for command in ("filter", "archive", "produce", "listen", "annotate"):
        assert "--kafka-conf" in takers[f"alertsieve {command}"]
    assert "--quota" in takers["alertsieve filter"]
    args = build_parser().parse_args(["produce", "--bootstrap", "b:1", "--topic", "t", "--kafka-conf", "a=1", "b=2"])  # fmt: skip
    assert args.kafka_conf == ["a=1", "b=2"]


def test_a_wrong_flag_in_a_page_is_caught():
    """The break: what the test above says of a flag no command has."""
    said = problem(".venv/bin/alertsieve backtest --input x --spark-conf a=b")
    assert said == "alertsieve: error: unrecognized arguments: --spark-conf a=b"
    assert problem("make setup tests") == "no make target tests"
    assert (
        problem("pip install 'alertsieve[stream,cluster] @ file:///w.whl'")
        == "no extra ['cluster']"
    )
    assert problem("pip install 'alertsieve[tom]'").startswith("alertsieve is not on PyPI")


def test_every_python_block_compiles_and_every_yaml_and_json_block_parses():
    for where, body in _blocks("python"):
        ast.parse(body, filename=where)
    for _where, body in _blocks("yaml"):
        yaml.safe_load(body)
    for _where, body in _blocks("json"):
        if "..." not in body:  # an excerpt of a record
            json.loads(body)
    assert len(_blocks("python")) >= 10


#: A block that adds to a file the reader already has says so on its first line; its names may
#: come from that file.
EXCERPT = re.compile(r"^#.*\ban excerpt\b")


def undefined_names(body: str) -> list[str]:
    """The names ``body`` uses and never defines or imports (pyflakes' rules, through ruff)."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--isolated",
            "--select",
            "F821",
            "--output-format",
            "concise",
            "--stdin-filename",
            "snippet.py",
            "-",
        ],
        input=body,
        capture_output=True,
        text=True,
        check=False,
    )
    return re.findall(r"Undefined name `(\w+)`", done.stdout)


def test_every_python_block_defines_or_imports_what_it_uses_and_its_imports_exist():
    """Copied into a file, each block runs as far as its names go: nothing used undefined (but in
    an excerpt, which says so), and every ``alertsieve`` module and name it imports exists."""
    import importlib
    import importlib.util

    problems = []
    for where, body in _blocks("python"):
        if not EXCERPT.match(body):
            problems += [f"{where}: {n} undefined" for n in undefined_names(body)]
        for node in ast.walk(ast.parse(body)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("alertsieve"):
                module = importlib.import_module(node.module)
                problems += [
                    f"{where}: no {a.name} in {node.module}"
                    for a in node.names
                    if not hasattr(module, a.name)
                    and importlib.util.find_spec(f"{node.module}.{a.name}") is None
                ]
    assert problems == []
    # The check itself: a name used before any import of it is caught.
    assert undefined_names("x = np.zeros(3)\nimport numpy as np\n") == ["np"]


def _filter_blocks() -> list[tuple[str, str]]:
    return [
        (w, b)
        for w, b in _blocks("python")
        if re.search(r"^(FILTER|FILTERS)\s*=|@python_filter", b, re.M)
    ]


@pytest.mark.slow
def test_every_filter_a_page_defines_loads_beside_the_contributed_ones_and_checks(
    spark, tmp_path, capsys, monkeypatch
):
    """Saved as a user would save it, each documented filter is found with the contributed ones
    (so none is named like one of them) and passes `alertsieve filters check`."""
    found = _filter_blocks()
    assert len(found) >= 4
    catalogs = tmp_path / "catalogs"
    for name in sorted({n for _, b in found for n in re.findall(r"xmatch\.(\w+)", b)}):
        # the pages make theirs from the shipped catalogs (galaxies: OpenNGC's, docs/filters.md)
        source = "builtin:hipparcos" if name == "hipparcos" else "builtin:openngc"
        add = ["catalog", "add", name, source, "--radius", "600", "--catalog-dir", str(catalogs)]
        assert main(add) == 0
    capsys.readouterr()
    for i, (where, body) in enumerate(found):
        folder = tmp_path / f"block{i}"
        folder.mkdir()
        (folder / "documented.py").write_text(body)
        names = re.findall(r'name="(\w+)"', body)[:1]
        monkeypatch.chdir(ROOT)
        code = main(
            [
                "filters",
                "check",
                *names,
                "--filter-path",
                str(folder),
                "--catalog-dir",
                str(catalogs),
            ]
        )
        out = capsys.readouterr()
        assert code == 0, f"{where}: {out.out}{out.err[-1500:]}"
        assert out.out.startswith(f"ok      {names[0]} ("), f"{where}: {out.out}"
