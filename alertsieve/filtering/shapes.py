"""Filters of one shape: the same SQL with other constants, found so the job can run them as data.

A broker's users write a few shapes with their own thresholds (``diaSource.snr > 30 AND
diaSource.reliability > 0.9`` and ``... > 12 AND ... > 0.6``). Compiled one by one, ten thousand
such filters are ten thousand conditions in the job's generated code, and any change to one is a
new plan. Lifted out of the text, their constants become rows of a table and the shape one
condition over a row of it (``alertsieve.stream.shaped``): the code stays the size of the shapes.

A constant is a number or a quoted string in a value position; the text around the constants,
whitespace aside, is the shape. Numbers keep their kind (integers stay integers, decimals and
exponents become doubles, as Spark compares them with float fields), so ``snr > 5`` and
``snr > 5.5`` are two shapes. Suffixed numbers (``5L``), strings with escapes or doubled quotes
(which Spark reads its own way) and whatever sits
in a type (``DECIMAL(10, 2)``) or an interval stay in the text: if lifting a constant changes
what the SQL means to Spark, the job's analysis of the shape fails and its filters are compiled
one by one as before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from alertsieve.filtering.model import Filter

TOKEN = re.compile(
    r"""(?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
      | (?P<quoted>`[^`]*`)
      | (?P<word>[A-Za-z_]\w*)
      | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?P<suffix>[A-Za-z]+)?)
      | (?P<space>\s+)
      | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
#: Words after which a number is part of a type or an interval, not a value (unless the word is
#: a field of a struct, as ``dec`` is declination in ``diaSource.dec``).
_KEEP_AFTER = {"decimal", "dec", "numeric", "char", "varchar", "interval"}
INT_MAX = 2**31 - 1
#: A decimal's most digits in Spark (a longer number is read otherwise, or refused).
MAX_DIGITS = 38
#: Below this many filters a shape is compiled: a table and a join buy nothing for one filter.
MIN_FILTERS = 2


@dataclass(frozen=True)
class Lifted:
    """A SQL condition as its shape and constants: ``pieces`` are the text between constants
    (one more than ``constants``), ``kinds`` each constant's Spark type."""

    pieces: tuple[str, ...]
    constants: tuple[object, ...]
    kinds: tuple[str, ...]

    @property
    def key(self) -> tuple:
        return (self.pieces, self.kinds)

    def render(self, names: Sequence[str]) -> str:
        """The shape with each constant replaced by ``names[i]`` (a column of the table)."""
        out = [self.pieces[0]]
        for name, piece in zip(names, self.pieces[1:], strict=True):
            out += [name, piece]
        return "".join(out)


def _kind(text: str) -> tuple[str, object] | None:
    """A number's kind and value; None for one Spark reads its own way (more digits than a
    decimal holds, beyond a double's range): it stays in the text, a shape of its own."""
    if len(re.sub(r"\D", "", text.split("e")[0].split("E")[0])) > MAX_DIGITS:
        return None
    if re.fullmatch(r"\d+", text):
        value = int(text)
        return ("int" if value <= INT_MAX else "bigint"), value
    value = float(text)
    return ("double", value) if math.isfinite(value) else None


@lru_cache(maxsize=65_536)  # a job lifts each filter to find shapes and to check it
def lift(sql: str) -> Lifted:
    """``sql``'s shape and constants (see the module)."""
    pieces, constants, kinds = [""], [], []
    words: list[str] = []  # the last two words and symbols, lower-cased
    for m in TOKEN.finditer(sql):
        text, group = m.group(0), m.lastgroup
        lifted = None
        kept_by_context = any(w in _KEEP_AFTER for w in words[-4:])
        if group == "string" and not re.search(r"\\|''|\"\"", text[1:-1]) and not kept_by_context:
            lifted = ("string", text[1:-1])
        elif group == "number" and not m.group("suffix") and not kept_by_context:
            lifted = _kind(text)
        if lifted:
            kinds.append(lifted[0])
            constants.append(lifted[1])
            pieces.append("")
        else:
            pieces[-1] += " " if group == "space" else text
        if group not in ("space",):
            # a field named like a type (``diaSource.dec``, declination) is no type
            field = group == "word" and words[-1:] == ["."]
            words = [*words[-3:], f".{text.lower()}" if field else text.lower()]
    return Lifted(
        tuple(p.strip() if len(pieces) == 1 else p for p in pieces), tuple(constants), tuple(kinds)
    )


#: A clause shape's columns per literal (``alertsieve.filtering.clauses``): the index of its
#: value, its range, its strings, and how it reads an unknown (``coalesce(atom, u) = w``).
SLOT_KINDS = ("int", "double", "double", "strings", "boolean", "boolean")


@dataclass(frozen=True)
class Shape:
    """Filters that run as rows of one table: the same lifted SQL, and the same record to publish
    (payload, format, fields), so one expression computes every member's output. A clause
    shape (``lifted`` None) holds filters of no shape as clauses of up to ``slots`` literals over
    the values ``numbers`` and ``strings``, a filter a row per clause."""

    lifted: Lifted | None  # the first member's; the others differ in constants only
    members: tuple[int, ...]  # indices into the job's filters, one per row
    constants: tuple[tuple[object, ...], ...]  # per row
    record: tuple = ()  # what its members publish: payload, format, fields (``record_key``)
    numbers: tuple[str, ...] = ()  # a clause shape's values: expressions read as doubles
    strings: tuple[str, ...] = ()  # and as strings
    slots: int = 0  # a clause shape's literals per row

    @property
    def kinds(self) -> tuple[str, ...]:
        """Its table's columns' kinds (int, bigint, double, string, strings, boolean)."""
        return self.lifted.kinds if self.lifted else SLOT_KINDS * self.slots

    @property
    def key(self) -> tuple:
        """What makes its generated code: two plans with the same keys differ in rows only."""
        made = self.lifted.key if self.lifted else (self.numbers, self.strings, self.slots)
        return (made, self.record)


def record_key(f: Filter) -> tuple:
    return (f.payload, f.format, tuple(sorted(f.fields.items())))


def find_shapes(
    filters: Sequence[Filter], min_filters: int = MIN_FILTERS, taken: frozenset[int] = frozenset()
) -> list[Shape]:
    """The shapes shared by at least ``min_filters`` SQL filters of ``filters``, in order of
    first appearance; Python filters and SQL of a shape of its own are left to compile, and
    the filters of ``taken`` (run elsewhere) left out."""
    groups: dict[tuple, list[tuple[int, Lifted]]] = {}
    for i, f in enumerate(filters):
        if f.runs_python or i in taken:
            continue
        lifted = lift(f.expressions()["sql"])
        if not lifted.constants:
            continue
        groups.setdefault((lifted.key, record_key(f)), []).append((i, lifted))
    return [
        Shape(
            lifted=members[0][1],
            members=tuple(i for i, _ in members),
            constants=tuple(lifted.constants for _, lifted in members),
            record=record,
        )
        for (_, record), members in groups.items()
        if len(members) >= max(min_filters, 1)
    ]
