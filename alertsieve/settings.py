"""Settings files read the same way everywhere: a typed model is the one source of truth for keys,
types and defaults, and a setting that cannot work fails before anything starts, on one line that
names the file, the key, the value given and the fix.

Models mark each field's fix with ``Field(examples=[...])``: the example is shown in the error, in
the spelling of where the value came from (a YAML key or a command-line flag).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from alertsieve.errors import AlertsieveError

#: Keys whose values are never printed: settings errors and the job's settings line mask them.
SECRET_WORDS = ("password", "secret", "jaas", "token", "key.pem", "keystore")


def masked(mapping: dict[str, Any]) -> dict[str, Any]:
    """``mapping`` with the values of secret-looking keys replaced by ``***``."""
    return {
        k: ("***" if any(w in str(k).lower() for w in SECRET_WORDS) else v)
        for k, v in mapping.items()
    }


class SettingsError(AlertsieveError, ValueError):
    """A settings file or flag that cannot work, one line per problem: where, key, value, fix."""


class ConfigError(SettingsError):
    """A job setting that cannot work, named with its source and the fix."""


def split_pair(flag: str, text: str, form: str = "KEY=VALUE") -> tuple[str, str]:
    """One ``KEY=VALUE`` given to ``flag`` as (key, value), stripped: both are needed, so a value
    lost on the way (``KEY=$UNSET``) fails here rather than reaching a client as an empty setting."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise SettingsError(f"{flag} {text!r}: expected {form}")
    return key.strip(), value.strip()


def parse_pairs(flag: str, texts: list[str]) -> dict[str, str]:
    """A repeatable ``KEY=VALUE`` flag (``--kafka-conf``) as one mapping; a key given again wins."""
    return dict(split_pair(flag, text) for text in texts)


def resolve_secret(value: str) -> str:
    """``env:NAME`` and ``file:PATH`` keep credentials out of config files and shell history."""
    if value.startswith("env:"):
        name = value[4:]
        if name not in os.environ:
            raise SettingsError(f"environment variable {name} (named by {value!r}) is not set")
        return os.environ[name]
    if value.startswith("file:"):
        path = Path(value[5:]).expanduser()
        if not path.exists():
            raise SettingsError(f"secret file {path} (named by {value!r}) does not exist")
        return path.read_text().strip()
    return value


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str | Path, error: type[SettingsError] = SettingsError) -> dict[str, Any]:
    """A YAML mapping from ``path`` (an empty file is an empty mapping). Read by libyaml where
    PyYAML has it: a table of ten thousand filters took 17 s in the pure-Python reader."""
    try:
        data = yaml.load(Path(path).read_text(), Loader=_LOADER)
    except (OSError, yaml.YAMLError) as e:
        raise error(f"cannot read {path}: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(
            f"{path}: expected a mapping of settings (key: value), got {type(data).__name__}"
        )
    return data


def explain(
    e: ValidationError,
    model: type[BaseModel],
    where: str,
    flags: dict[str, str] | None = None,
) -> str:
    """pydantic's errors as lines a user can act on. ``flags`` maps a field to the command-line
    flag its value came from, so the fix is spelled as the user wrote it."""
    flags = flags or {}
    lines = []
    reported: set[str] = set()
    for err in e.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        key = loc[0] if loc else ""
        path = ".".join(loc)
        if key and key in reported:  # one line per setting: the first problem is the one to fix
            continue
        reported.add(key)
        if err["type"] == "extra_forbidden":
            lines.append(_unknown(where, path, key, model, loc))
            continue
        if not loc:  # a check across fields: its message says what to do
            lines.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
            continue
        value = err.get("input")
        shown = (
            "(missing)"
            if err["type"] == "missing"
            else repr(masked(value) if isinstance(value, dict) else value)
        )
        problem = err["msg"].removeprefix("Value error, ")
        source = flags.get(key)
        fix = "" if "e.g." in problem else _example(model, key, source)
        lines.append(f"{where}: {source or path} = {shown}: {problem}{fix}")
    return "\n".join(lines)


def _unknown(where: str, path: str, key: str, model: type[BaseModel], loc: list[str]) -> str:
    if len(loc) > 1:  # inside a nested mapping: say so without guessing
        return f"{where}: {path} is not a known setting; remove it"
    known = sorted(yaml_keys(model))
    hint = model.renamed.get(key) if hasattr(model, "renamed") else None
    if hint:
        return f"{where}: {key} is not a setting: {hint}"
    close = [k for k in known if k.startswith(key[:6])] or difflib.get_close_matches(
        key, known, n=1
    )
    guess = f"did you mean {close[0]!r}? " if close else ""
    return f"{where}: unknown key {key!r}: {guess}known keys: {', '.join(known)}"


def _example(model: type[BaseModel], key: str, flag: str | None) -> str:
    """The field's first example, as a YAML line or, for a flag, as the flag's own example."""
    info = model.model_fields.get(key)
    if info is None:
        return ""
    if flag:
        example = (info.json_schema_extra or {}).get("cli_example")
        return f"; e.g. {flag} {example}" if example else ""
    if not info.examples:
        return ""
    text = yaml.safe_dump({key: info.examples[0]}, default_flow_style=True, width=1000)
    return f"; e.g. {text.strip().removeprefix('{').removesuffix('}')}"


def _code_only(info) -> bool:
    """Fields a library caller sets in code but a settings file cannot (e.g. filter objects)."""
    extra = info.json_schema_extra or {}
    return bool(extra.get("code_only"))


def yaml_keys(model: type[BaseModel]) -> list[str]:
    """The keys a settings file may use."""
    return [n for n, f in model.model_fields.items() if not _code_only(f)]
