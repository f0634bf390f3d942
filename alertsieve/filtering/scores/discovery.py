"""Where models come from, as filters do: the contributed ones (the repository's ``models/``,
installed as the package ``alertsieve_models`` and named by the ``contributed`` entry point of
``alertsieve.models``), folders or files given with ``--model-path``, and other installed
packages declaring ``alertsieve.models`` entry points. A model module assigns a ``Model`` at
module level (``MODEL = Model(...)``), or a list of them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from alertsieve.filtering.discovery import (
    CONTRIBUTED,
    contributed_dir,
    defined_in,
    load_defined,
)
from alertsieve.filtering.scores.model import Model, ModelError

ENTRY_POINT_GROUP = "alertsieve.models"


def load_model_file(path: Path) -> list[Model]:
    """The models a module file defines at top level; a file that defines none, or does not
    import, fails naming it."""
    return load_defined(
        path,
        Model,
        ModelError,
        "defines no model; assign MODEL = Model(name=..., survey=..., columns=..., load=...,"
        " predict=...) at module level",
    )


def discover_models(
    paths: Iterable[Path | str] = (), builtin: bool = True, entry_points: bool = True
) -> list[Model]:
    """Every model found, each checked (``Model.check``); a name defined twice fails naming both."""
    contributed = contributed_dir(ENTRY_POINT_GROUP) if builtin else None
    sources = [contributed] if contributed is not None else []
    sources += [Path(p).expanduser() for p in paths]
    found: list[Model] = []
    for source in sources:
        if source.is_dir():
            files = sorted(
                p for p in source.iterdir() if p.suffix == ".py" and not p.name.startswith("_")
            )
        elif source.is_file():
            files = [source]
        else:
            raise ModelError(f"model path {source} does not exist", origin=str(source))
        for file in files:
            found += load_model_file(file)
    if entry_points:
        from importlib.metadata import entry_points as installed

        for ep in installed(group=ENTRY_POINT_GROUP):
            if ep.name == CONTRIBUTED:
                continue
            try:
                target = ep.load()
            except Exception as e:  # noqa: BLE001
                raise ModelError(
                    f"entry point {ep.name} ({ep.value}) cannot be loaded: {e}"
                ) from None
            namespace = vars(target) if not isinstance(target, Model) else {ep.name: target}
            found += defined_in(namespace, Model, f"entry point {ep.value}")
    seen: dict[str, Model] = {}
    for m in found:
        m.check()
        if m.name in seen:
            raise ModelError(
                f"model {m.name!r} is defined twice: {seen[m.name].origin} and {m.origin}",
                origin=m.origin,
            )
        seen[m.name] = m
    return found
