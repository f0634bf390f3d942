"""The blocks of the project's pages as the tests read them: the README, docs/ and the notebooks'
markdown cells, their fenced blocks by language, and the commands of their console blocks with
the output shown under each."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Scripts in commands, and the alertsieve command whose parser they share.
JOB_SCRIPTS = {"jobs/filter_stream.py": "filter", "jobs/produce_alerts.py": "produce"}


def texts() -> list[tuple[str, str]]:
    """(where, markdown) of every page and every notebook's markdown cells."""
    out = [(p.name, p.read_text()) for p in PAGES]
    for book in NOTEBOOKS:
        for i, cell in enumerate(json.loads(book.read_text())["cells"]):
            if cell["cell_type"] == "markdown":
                out.append((f"{book.name} cell {i}", "".join(cell["source"])))
    return out


def blocks(language: str, text: str) -> list[str]:
    """The bodies of ``text``'s fenced blocks in ``language``."""
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def console_commands(text: str) -> list[tuple[str, str]]:
    """(command, the output shown under it) of every ``$ `` line of ``text``'s console blocks;
    a line ending in a backslash continues on the next."""
    out: list[tuple[str, str]] = []
    for block in blocks("console", text):
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
