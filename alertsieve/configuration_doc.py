"""docs/configuration.md, generated: every key of the filter job's settings file (its flag, type,
default, meaning and an example, from the settings model ``alertsieve.stream.config``), then every
flag of every ``alertsieve`` command (from the command line's own parser). Generated so that the
page cannot drift from the code: ``python -m alertsieve.configuration_doc > docs/configuration.md``
writes it, and a test keeps the two equal."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HEADER = """# Configuration

Generated from the code by `python -m alertsieve.configuration_doc > docs/configuration.md` (a
test keeps this page equal to what it prints): edit the settings model
(`alertsieve/stream/config.py`) or the command line (`alertsieve/cli/`), not this page.

## The filter job's settings

`alertsieve filter` and `spark-submit jobs/filter_stream.py` read a YAML settings file
(`--config FILE`, e.g. `conf/filter_stream.yaml`) that needs only what differs from the defaults;
a flag overrides its key. A wrong key, type or value stops the job before Spark starts, on one line
naming the file (or flag), the key, the value and the fix.
"""


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text.replace("|", "\\|").replace("<", "&lt;").replace(str(Path.home()), "~")


def settings_table() -> list[str]:
    """One row per settings key of the job."""
    from alertsieve.stream.config import JobConfig

    rows = ["| key | flag | default | meaning | example |", "|---|---|---|---|---|"]
    for name, info in JobConfig.model_fields.items():
        extra = info.json_schema_extra or {}
        if extra.get("code_only"):
            continue
        default = info.get_default(call_default_factory=True)
        example = info.examples[0] if info.examples else ""
        flag = f"`{extra['flag']}`" if "flag" in extra else ""
        rows.append(
            f"| `{name}` | {flag} | `{_cell(default)}` | {_cell(info.description or '')} | `{_cell(example)}` |"
        )
    return rows


def _commands(
    parser: argparse.ArgumentParser, prefix: str = "alertsieve"
) -> list[tuple[str, str | None, argparse.ArgumentParser]]:
    """(command, its help line, its parser) for every command and sub-command, in the order they
    are declared."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                out.append((f"{prefix} {name}", helps.get(name), child))
                out += _commands(child, f"{prefix} {name}")
    return out


def flags_section() -> list[str]:
    """Each command's help line and its flags (positional arguments too)."""
    from alertsieve.cli import build_parser

    lines = ["", "## Every command's flags", ""]
    for command, help_line, child in _commands(build_parser()):
        lines += [f"### `{command}`", ""]
        if help_line:
            lines += [_cell(help_line), ""]
        rows = []
        for action in child._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
            if action.choices and not action.option_strings:
                name += " (" + ", ".join(f"`{c}`" for c in action.choices) + ")"
            rows.append(f"| {name} | {_cell(action.help or '')} |")
        lines += (["| flag | meaning |", "|---|---|", *rows] if rows else ["(no flags)"]) + [""]
    return lines


def configuration_markdown() -> str:
    return "\n".join([HEADER, *settings_table(), *flags_section()]).rstrip() + "\n"


if __name__ == "__main__":
    print(configuration_markdown(), end="")
