"""Where filters come from: installed packages that declare the ``alertsieve.filters`` entry
points (alertsieve's own, ``contributed``: the package ``alertsieve_filters``, which is the
repository's ``filters/``), and folders or files named in the configuration.

A folder holds filter modules (``*.py``: filters, or lists of them, at module level) and filter
tables (``*.yaml``: many SQL filters as rows, ``alertsieve.filtering.tables``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from alertsieve.filtering.model import Filter, FilterError
from alertsieve.filtering.tables import load_filter_table

#: Files a filter folder holds: modules and tables.
TABLE_SUFFIXES = (".yaml", ".yml")

ENTRY_POINT_GROUP = "alertsieve.filters"
#: The entry point of the filters alertsieve ships (pyproject.toml).
CONTRIBUTED = "contributed"


def builtin_filter_dir() -> Path | None:
    """The folder of the contributed filters, where alertsieve is installed (a checkout's
    ``filters/`` in an editable install, the wheel's ``alertsieve_filters`` otherwise): the
    package its ``contributed`` entry point names. None when the entry point is not installed."""
    return contributed_dir(ENTRY_POINT_GROUP)


def contributed_dir(group: str) -> Path | None:
    """The folder of the package the ``contributed`` entry point of ``group`` names (filters:
    ``alertsieve_filters``; models: ``alertsieve_models``), or None when it is not installed."""
    from importlib.metadata import entry_points
    from importlib.util import find_spec

    ep = next((e for e in entry_points(group=group) if e.name == CONTRIBUTED), None)
    spec = find_spec(ep.value) if ep is not None else None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def looked_in(
    paths: Iterable[Path | str] = (), builtin: bool = True, entry_points: bool = True
) -> str:
    """Where ``discover`` looks, for a message that found nothing."""
    places = (
        [str(builtin_filter_dir() or f"(no {CONTRIBUTED!r} entry point installed)")]
        if builtin
        else []
    )
    places += [str(p) for p in paths]
    if entry_points:
        places.append(f"packages declaring the {ENTRY_POINT_GROUP!r} entry points")
    return ", ".join(places) or "nowhere (filter discovery is off and no --filter-path is given)"


def _filters_in(namespace: dict, origin: str) -> list[Filter]:
    """The public filters of a module: each value that is a filter, and the filters in each list
    or tuple (a module defining many filters at once: ``FILTERS = [AlertFilter(...), ...]``)."""
    return defined_in(namespace, Filter, origin)


def defined_in(namespace: dict, kind: type, origin: str) -> list:
    """The public values of a module that are ``kind`` (a filter, a model), and those in each
    list or tuple, each with its ``origin``."""
    found: list = []
    for key, value in namespace.items():
        if key.startswith("_"):
            continue
        if isinstance(value, kind):
            found.append(value)
        elif isinstance(value, list | tuple):
            found += [v for v in value if isinstance(v, kind)]
    return [replace(f, origin=origin) for f in found]


def load_filter_file(path: Path) -> list[Filter]:
    """Import one filter module from a file and return the filters it defines at top level."""
    return load_defined(
        path,
        Filter,
        FilterError,
        "defines no filter; assign an AlertFilter(...) or a @python_filter function at module"
        " level (e.g. FILTER = AlertFilter(name=..., sql=...)), or a list of them",
    )


def load_defined(path: Path, kind: type, error: type[FilterError], missing: str) -> list:
    """The ``kind`` values (filters, models) a module file defines at top level. A file that does
    not import, or defines none (``missing``: what to write instead), fails with ``error``
    naming it."""
    noun = kind.__name__.lower()
    try:
        module = import_file(path, f"alertsieve_user_{noun}s")
    except Exception as e:  # noqa: BLE001 - any import failure is the module author's to fix
        raise error(
            f"{path}: the {noun} module cannot be imported: {type(e).__name__}: {e}",
            origin=str(path),
        ) from None
    found = defined_in(vars(module), kind, str(path))
    if not found:
        raise error(f"{path}: {missing}", origin=str(path))
    return found


def import_file(path: Path, package: str):
    """Import a module from a file, as ``package.<stem>``. Spark ships Python filters and models
    to its workers by pickling; a module loaded from a path is not importable there, so its
    functions travel by value. A subscriber's install (no pyspark) lists filters and ships
    nothing, so there is nothing to register."""
    import importlib.util
    import sys

    module_name = f"{package}.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    try:
        from pyspark import cloudpickle
    except ImportError:
        return module
    cloudpickle.register_pickle_by_value(module)
    return module


def filter_files(folder: Path) -> list[Path]:
    """The filter modules and tables of a folder (names starting with '_' are not filters)."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.suffix in (".py", *TABLE_SUFFIXES) and not p.name.startswith("_")
    )


def discover(
    paths: Iterable[Path | str] = (),
    builtin: bool = True,
    entry_points: bool = True,
    on_bad_file: Callable[[FilterError], None] | None = None,
) -> list[Filter]:
    """Filters from the contributed folder (``builtin``), from extra folders or files, and from
    the other installed packages that declare the ``alertsieve.filters`` entry-point group.

    A file that does not load raises its error, or with ``on_bad_file`` is handed to it and left
    out (a job that skips bad filters runs the other files')."""
    contributed = builtin_filter_dir() if builtin else None
    sources: list[Path] = [contributed] if contributed is not None else []
    sources += [Path(p) for p in paths]
    found: list[Filter] = []
    for source in sources:
        if source.is_dir():
            files = filter_files(source)
        elif source.is_file():
            files = [source]
        else:
            raise FilterError(f"filter path {source} does not exist")
        for file in files:
            try:
                found += (
                    load_filter_table(file)
                    if file.suffix in TABLE_SUFFIXES
                    else load_filter_file(file)
                )
            except FilterError as e:
                if on_bad_file is None:
                    raise
                on_bad_file(e)
    if entry_points:
        from importlib.metadata import entry_points as installed

        for ep in installed(group=ENTRY_POINT_GROUP):
            if ep.name == CONTRIBUTED:  # a folder of modules: read above, as ``builtin``
                continue
            try:
                target = ep.load()
            except Exception as e:  # noqa: BLE001
                raise FilterError(
                    f"entry point {ep.name} ({ep.value}) cannot be loaded: {e}"
                ) from None
            namespace = (
                vars(target)
                if hasattr(target, "__dict__") and not isinstance(target, Filter)
                else {ep.name: target}
            )
            found += _filters_in(namespace, f"entry point {ep.value}")
    return found


def chosen(names: str | None, paths: list[str] | None) -> list[Filter]:
    """The discovered filters (``paths`` and the installed ones), or those of the comma-separated
    ``names`` in their order; a name not found fails naming the known ones."""
    found = discover(paths or [])
    if not names:
        return found
    by_name = {f.name: f for f in found}
    missing = [n for n in names.split(",") if n not in by_name]
    if missing:
        raise FilterError(f"no filter named {missing}; known: {sorted(by_name)}")
    return [by_name[n] for n in names.split(",")]


def source_of(f: Filter) -> str:
    """The file (or entry point, or setting) a filter came from, without the row of a table."""
    return f.origin.split(" (filters[")[0]


def counts_by_source(filters: list[Filter]) -> list[tuple[str, str, str, int]]:
    """(survey, kind, source, number of filters), in the order first met: what a list of a
    thousand filters is made of."""
    counts: dict[tuple[str, str, str], int] = {}
    for f in filters:
        key = (f.survey or "any", f.kind, source_of(f))
        counts[key] = counts.get(key, 0) + 1
    return [(*key, n) for key, n in counts.items()]
