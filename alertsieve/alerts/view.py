"""One filter view across Rubin schema versions: the union of the fields of the versions a topic may
carry, types widened where versions differ, every field a version lacks null. A filter written once
against the view reads v7.x to v11.x alike; which versions lack a field it names is known up front.

Pure logic over the schema definitions (no Spark): a view field is a path (``diaSource.snr``,
``prvDiaSources[].psfFlux``), its widened type, whether it may be null, and the versions that have it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from alertsieve.alerts.schemas import load_rubin_schema
from alertsieve.errors import AlertsieveError

#: Numeric types in the order Avro promotes them: a field that is an int in one version and a
#: long in another is a long in the view (and so on up to double).
WIDENING = ("int", "long", "float", "double")
PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


class ViewError(AlertsieveError, ValueError):
    """Versions whose schemas disagree in a way no widening can reconcile."""


@dataclass
class ViewField:
    """One leaf of the view: its path, widened type, nullability and the versions that have it."""

    path: str
    type: str
    nullable: bool
    versions: list[str] = field(default_factory=list)
    doc: str = ""


def leaves(definition: dict) -> dict[str, tuple[str, bool, str]]:
    """Every primitive leaf of an alert schema: path -> (type, nullable, doc). Records nest with
    ``.``, arrays of records with ``[]`` (``prvDiaSources[].psfFlux``); a nullable record makes
    all of its leaves nullable."""
    names: dict[str, Any] = {}
    out: dict[str, tuple[str, bool, str]] = {}

    def walk(node: Any, path: str, nullable: bool, doc: str) -> None:
        if isinstance(node, list):  # a union: ["null", T] is the only kind alert schemas use
            branches = [b for b in node if b != "null"]
            if len(branches) != 1:
                raise ViewError(f"{path}: union {node} is not [null, T]")
            walk(branches[0], path, nullable or "null" in node, doc)
            return
        if isinstance(node, str) and node not in PRIMITIVES:
            node = names[node]
        if isinstance(node, str):
            out[path] = (node, nullable, doc)
            return
        kind = node["type"]
        if kind == "record":
            names[node["name"]] = node
            if "namespace" in node:
                names[f"{node['namespace']}.{node['name']}"] = node
            for f in node["fields"]:
                child = f"{path}.{f['name']}" if path else f["name"]
                walk(f["type"], child, nullable, f.get("doc", ""))
        elif kind == "array":
            walk(node["items"], f"{path}[]", nullable, doc)
        elif kind in PRIMITIVES:
            out[path] = (kind, nullable, doc)
        else:  # enum, fixed, map: not in alert schemas; say so rather than guess
            raise ViewError(f"{path}: Avro type {kind!r} is not supported in the view")

    walk(definition, "", False, "")
    return out


def widen(a: str, b: str, path: str) -> str:
    if a == b:
        return a
    if a in WIDENING and b in WIDENING:
        return max(a, b, key=WIDENING.index)
    raise ViewError(f"{path}: {a} in one version and {b} in another cannot share one column")


def build_view(versions: list[str]) -> list[ViewField]:
    """The view of Rubin ``versions`` ('MAJOR.MINOR' strings) as lsst-alert-packet ships them."""
    return view_of({v: load_rubin_schema(v).definition for v in versions})


def view_of(definitions: dict[str, dict]) -> list[ViewField]:
    """The view of writer schemas labelled by version ('MAJOR.MINOR'): fields in the newest
    version's order, then those only older versions have."""
    ordered = sorted(definitions, key=version_order, reverse=True)
    fields: dict[str, ViewField] = {}
    for version in ordered:
        for path, (kind, nullable, doc) in leaves(definitions[version]).items():
            if path in fields:
                view = fields[path]
                view.type = widen(view.type, kind, path)
                view.nullable = view.nullable or nullable
            else:
                fields[path] = view = ViewField(path, kind, nullable, doc=doc)
            view.versions.append(version)
    for view in fields.values():
        view.versions.sort(key=version_order)
        view.nullable = view.nullable or len(view.versions) < len(definitions)
    return list(fields.values())


def version_order(version: str) -> tuple[int, ...]:
    """'10.0' after '9.0': versions compare by their numbers."""
    return tuple(int(x) for x in re.findall(r"\d+", version))


def missing_in(
    view: list[ViewField], paths: list[str], versions: list[str]
) -> dict[str, list[str]]:
    """For each of ``paths`` the versions (of ``versions``) that lack it: what a filter reading
    those fields sees as null there."""
    by_path = {f.path: f for f in view}
    return {
        p: [v for v in versions if p in by_path and v not in by_path[p].versions] for p in paths
    }


def presence_table(versions: list[str]) -> str:
    """The view as a Markdown table: field, type, and a mark per version that has it."""
    view = build_view(versions)
    ordered = sorted(versions, key=version_order)
    head = "| field | type | " + " | ".join(ordered) + " |"
    rule = "|---|---|" + "|".join(":-:" for _ in ordered) + "|"
    rows = []
    for f in view:
        kind = f"{f.type}{'?' if f.nullable else ''}"
        marks = " | ".join("x" if v in f.versions else "" for v in ordered)
        rows.append(f"| `{f.path}` | {kind} | {marks} |")
    return "\n".join([head, rule, *rows])


def view_document(versions: list[str]) -> str:
    """docs/filter-view.md: what a filter may name, and in which versions it exists."""
    from importlib.metadata import version as installed

    view = build_view(versions)
    everywhere = sum(1 for f in view if len(f.versions) == len(versions))
    return f"""# The filter view: Rubin alert fields by schema version

Generated by `alertsieve schemas view` from the schemas of `lsst-alert-packet`
{installed("lsst-alert-packet")} (versions {", ".join(versions)}); do not edit by hand.

Rubin bumps the schema's major version without backward compatibility, so each version is read
with its own schema and resolved by Avro into one view: the union of the versions' fields, numeric
types widened where versions differ (int < long < float < double, as Avro promotes them), and
every field a version lacks is null for that version's alerts (a record a version has is not
null, even if it lacks some of the record's fields). A filter names fields by these paths
(`prvDiaSources[]` is the array: write `size(prvDiaSources)` or
`transform(prvDiaSources, s -> s.psfFlux)` in SQL). `type?` may be null.

{len(view)} fields; {everywhere} exist in every version listed.

{presence_table(versions)}
"""
