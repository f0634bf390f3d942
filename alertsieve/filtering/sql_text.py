"""Reading names out of a filter's SQL text without parsing it.

Start-up checks look for the names an expression reads (a catalog, the features, a field
asked only for its existence, a field whose null the filter handles). Words inside string
literals are data, not names: a filter ``note = 'xmatch.hipparcos'`` reads no catalog, so literals
are blanked before any search.
"""

from __future__ import annotations

import re

_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_CATALOG = re.compile(r"(?<![\w.`])`?(xmatch|watch)`?\s*\.\s*`?([A-Za-z]\w*)`?", flags=re.I)


def without_strings(expression: str) -> str:
    """``expression`` with every quoted literal replaced by ``''``."""
    return _STRINGS.sub("''", expression)


def _word(name: str) -> str:
    """A regex for ``name`` (a dotted path) as SQL may write it: backticks, spaces around dots."""
    return r"`?" + r"`?\s*\.\s*`?".join(re.escape(part) for part in name.split(".")) + r"`?"


def mentions(expression: str, name: str) -> bool:
    """Whether ``expression`` names ``name`` (or something inside it: ``ssSource.ssObjectId``)."""
    return (
        re.search(rf"(?<![\w.`]){_word(name)}(?![\w`])", without_strings(expression), flags=re.I)
        is not None
    )


def _every_use_is(expression: str, name: str, functions: str) -> bool:
    """Whether ``name`` is used, and every use is the first argument of one of ``functions`` (a
    regex alternation) or ``name IS [NOT] NULL``."""
    bare, word = without_strings(expression), _word(name)
    alone = rf"(?<![\w.`]){word}(?![\w`])"
    uses = len(re.findall(alone, bare, flags=re.I))
    forms = len(
        re.findall(
            rf"(?:{functions})\s*\(\s*{word}\s*[,)]|{alone}\s+is\s+(?:not\s+)?null\b",
            bare,
            flags=re.I,
        )
    )
    return uses > 0 and uses == forms


def only_existence(expression: str, name: str) -> bool:
    """Whether ``expression`` uses ``name`` only to ask if it is there or how long it is:
    ``size(x)``, ``cardinality(x)``, ``x IS [NOT] NULL``, ``isnull(x)``, ``isnotnull(x)``."""
    return _every_use_is(expression, name, "size|cardinality|isnull|isnotnull")


def minds_null(expression: str, name: str) -> bool:
    """Whether ``expression`` says what a null ``name`` means wherever it reads it:
    ``coalesce(x, ...)``, ``ifnull``/``nvl(x, ...)``, ``x IS [NOT] NULL``, ``isnull(x)``,
    ``isnotnull(x)``. Such a filter has decided how to treat versions that lack the field."""
    return _every_use_is(expression, name, "coalesce|ifnull|nvl|isnull|isnotnull")


def named_catalogs(expression: str) -> set[tuple[str, str]]:
    """(family, name) pairs an expression reads: ``xmatch.hipparcos.distance_arcsec`` -> ('xmatch', 'hipparcos')."""
    return {(f.lower(), n) for f, n in _CATALOG.findall(without_strings(expression))}
