"""Which fields a filter reads that some version of the job's view lacks: null there, unless the
filter says what their null means. Said at start-up by the job and by ``filters check``."""

from __future__ import annotations

from alertsieve.alerts.view import ViewField, missing_in, version_order
from alertsieve.filtering.model import Filter
from alertsieve.filtering.sql_text import mentions, minds_null
from alertsieve.view.decoder import Decoder


def lacking_fields(
    decoder: Decoder, filters: list[Filter], reads: dict[str, list[str]]
) -> dict[str, dict[str, list[str]]]:
    """Per filter, the fields it reads that some version the job reads lacks, unless the filter
    says what their null means (``coalesce(diaSource.isDipole, false)``, ``ssSource IS NOT
    NULL``): it has decided. A record read whole (``ssSource IS NOT NULL``) counts as one field,
    lacking where no field of it exists."""
    versions = sorted(set(decoder.versions.values()), key=version_order)
    by_top: dict[str, list[ViewField]] = {}
    for field in decoder.view:
        by_top.setdefault(field.path.split(".")[0], []).append(field)
    known: dict[tuple[str, ...], dict[str, list[str]]] = {}  # filters mostly read alike
    out = {}
    for f in filters:
        expressions = list(f.expressions().values())
        used = tuple(reads[f.name])
        if used not in known:
            known[used] = _missing(decoder.view, by_top, used, versions)
        missing = {p: v for p, v in known[used].items() if v and not _handled(expressions, p)}
        if missing:
            out[f.name] = missing
    return out


def _handled(expressions: list[str], path: str) -> bool:
    """Whether the filter says what a null ``path`` means (or its record's, when it asks only
    whether the record is there: ``ssSource IS NOT NULL`` reads ``ssSource.diaSourceId``), and
    never reads it bare."""
    names = (path.removesuffix("[]"), path.split(".")[0].removesuffix("[]"))
    return any(minds_null(e, n) for e in expressions for n in names) and not any(
        mentions(e, names[0]) and not minds_null(e, names[0]) for e in expressions
    )


def _missing(
    view: list[ViewField],
    by_top: dict[str, list[ViewField]],
    used: tuple[str, ...],
    versions: list[str],
) -> dict[str, list[str]]:
    chosen, whole = set(used), {}
    for top, fields in by_top.items():
        if len(fields) > 1 and all(f.path in chosen for f in fields):
            present = {v for f in fields for v in f.versions}
            whole[top] = [v for v in versions if v not in present]
            chosen -= {f.path for f in fields}
    return {**whole, **missing_in(view, [p for p in used if p in chosen], versions)}


#: Filters named in one line of ``lacking_lines`` before "and N more".
SHOWN_FILTERS = 3


def lacking_lines(lacking: dict[str, dict[str, list[str]]]) -> list[str]:
    """One line per set of versions and fields: which filters read fields null there. Filters
    that lack the same are one line (ten thousand users' filters of a few shapes are a few
    lines, not ten thousand)."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for name, fields in lacking.items():
        by_versions: dict[tuple[str, ...], list[str]] = {}
        for path, missing in fields.items():
            by_versions.setdefault(tuple(missing), []).append(path)
        for missing, paths in by_versions.items():
            groups.setdefault((missing, tuple(paths)), []).append(name)
    lines = []
    for (missing, paths), names in groups.items():
        shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
        who = (
            f"filter {names[0]}"
            if len(names) == 1
            else "filters "
            + ", ".join(names[:SHOWN_FILTERS])
            + (f" and {len(names) - SHOWN_FILTERS} more" if len(names) > SHOWN_FILTERS else "")
        )
        lines.append(f"{who}: null in version(s) {', '.join(missing)}: {shown}")
    return lines
