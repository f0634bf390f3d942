"""Free SQL as rows too: a condition of ``AND``, ``OR`` and ``NOT`` over comparisons of an
expression with constants, written as disjoint clauses of one table.

Users' own SQL rarely shares a shape with another's (``(diaSource.snr > 8 OR diaSource.band IN
('g', 'r')) AND diaObject.r_psfFluxMean > 3e4``), so ``alertsieve.filtering.shapes`` leaves it to
compile one by one: a fifth of a broker's ten thousand filters was two thousand conditions in the
generated code, most of a batch's planning and of the driver's heap. Most of it is still a
boolean tree whose leaves compare one expression with constants. The leaves become *atoms*: a
closed range of an expression's value as a double (``x > 5`` is ``x >= nextafter(5)``, exact for
doubles and for the floats and integers Spark compares with them), or a set of strings. Each
filter becomes rows of *literals* (an atom true, false, not true or not false), one row per
clause, the clauses disjoint so that an alert matches at most one row of a filter and is
published once. The job evaluates every row with one condition (``alertsieve.stream.shaped``),
the expressions once per alert into two arrays; its code is the size of the longest clause.

SQL's three values are kept: a comparison with a null is unknown, ``NOT`` of unknown is unknown,
and a filter holds only where its condition is true. Anything this module does not read exactly
(``CASE``, ``LIKE``, a function of a comparison, a constant Spark would read its own way) leaves
the filter to compile as before (``Unfit``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product

from alertsieve.errors import AlertsieveError
from alertsieve.filtering.model import Filter
from alertsieve.filtering.shapes import SLOT_KINDS, TOKEN, Shape

#: Clauses of one filter and literals of one clause beyond which the filter compiles instead
#: (an ``OR`` of n atoms is n clauses, the last of n literals; ``AND`` of ``OR``s multiplies).
MAX_CLAUSES, MAX_LITERALS = 16, 8
#: Integers Spark compares with a float column as floats: exact up to 2**24 (beyond, the
#: float's rounding decides, which a double does not reproduce).
FLOAT_EXACT, DOUBLE_EXACT = 2**24, 2**53
#: Words that make an expression something else than a value compared (or that this module
#: does not read); an expression holding one leaves its filter to compile.
_KEYWORDS = {
    "and", "or", "not", "in", "is", "null", "between", "like", "ilike", "rlike", "regexp",
    "case", "when", "then", "else", "end", "exists", "true", "false", "interval", "as",
    "distinct", "filter", "over", "any", "some", "all", "escape", "div", "unknown", "similar",
}  # fmt: skip
_COMPARISONS = {">", "<", ">=", "<=", "=", "==", "!=", "<>"}
_FLIPPED = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=": "=", "==": "=", "!=": "!=", "<>": "<>"}
_OPERATOR_CHARS = set("<>=!|&^~;?:")


class Unfit(AlertsieveError):  # noqa: N818 (a verdict on a condition, never raised past runnable_shapes)
    """The condition is not read exactly as clauses; its filter compiles as before."""


@dataclass(frozen=True)
class Atom:
    """A comparison's truth: ``value`` (an expression's SQL) within ``[lo, hi]`` (numbers, either
    bound open-ended as None) or in ``among`` (strings). ``big_integer``: a bound written as an
    integer beyond ``FLOAT_EXACT``, which Spark compares with a float column as a float."""

    value: str
    lo: float | None = None
    hi: float | None = None
    among: tuple[str, ...] | None = None
    big_integer: bool = False

    @property
    def strings(self) -> bool:
        return self.among is not None


#: What a literal accepts of its atom's three values, as ``coalesce(atom, unknown) = wanted``:
#: true, false, not true (false or unknown), not false (true or unknown).
TRUE, FALSE, NOT_TRUE, NOT_FALSE = (False, True), (True, False), (False, False), (True, True)
_ACCEPTS = {TRUE: {"t"}, FALSE: {"f"}, NOT_TRUE: {"f", "u"}, NOT_FALSE: {"t", "u"}}
_NEGATION = {TRUE: NOT_TRUE, FALSE: NOT_FALSE}

Literal = tuple[Atom, tuple[bool, bool]]
Clause = tuple[Literal, ...]


@dataclass(frozen=True)
class _Leaf:
    atom: Atom
    positive: bool = True


@dataclass(frozen=True)
class _Node:
    op: str  # "and" | "or"
    parts: tuple


def _negate(node):
    """``NOT node`` pushed to the leaves: De Morgan holds in SQL's three-valued logic."""
    if isinstance(node, _Leaf):
        return _Leaf(node.atom, not node.positive)
    return _Node("or" if node.op == "and" else "and", tuple(_negate(p) for p in node.parts))


# --- reading the SQL ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # string, quoted, word, number, op, other
    text: str
    spaced: bool  # whitespace before it

    @property
    def word(self) -> str:
        return self.text.lower() if self.kind == "word" else ""


def _tokens(sql: str) -> list[_Token]:
    out: list[_Token] = []
    spaced = False
    for m in TOKEN.finditer(sql):
        kind, text = m.lastgroup, m.group(0)
        if kind == "space":
            spaced = True
            continue
        if kind == "other" and text in _OPERATOR_CHARS | {"="}:
            if out and out[-1].kind == "op" and not spaced and out[-1].text + text in {
                ">=", "<=", "<>", "!=", "==", "<=>", "||", "&&", "->", "::",
            }:  # fmt: skip
                out[-1] = _Token("op", out[-1].text + text, out[-1].spaced)
                continue
            kind = "op"
        if kind == "number" and m.group("suffix"):
            raise Unfit(f"a suffixed number ({text})")
        out.append(_Token(kind, text, spaced))
        spaced = False
    return out


def _text(tokens: list[_Token]) -> str:
    """An expression's SQL, whitespace made single: the key of the value it names."""
    return "".join((" " if t.spaced and i else "") + t.text for i, t in enumerate(tokens))


def _depths(tokens: list[_Token]) -> list[int]:
    """Each token's bracket depth (an opening bracket counts as outside)."""
    out, depth = [], 0
    for t in tokens:
        if t.text in ")]":
            depth -= 1
            if depth < 0:
                raise Unfit("unbalanced brackets")
        out.append(depth)
        if t.text in "([":
            depth += 1
    if depth:
        raise Unfit("unbalanced brackets")
    return out


def _expression(tokens: list[_Token]) -> str:
    """The SQL of a value compared: nothing that binds looser than a comparison, or that this
    module does not read."""
    if not tokens:
        raise Unfit("a comparison without its value")
    for i, t in enumerate(tokens):
        field = i > 0 and tokens[i - 1].text == "."
        if t.kind == "op" or (t.word in _KEYWORDS and not field):
            raise Unfit(f"{t.text!r} in a value compared")
    return _text(tokens)


def _number(tokens: list[_Token]) -> tuple[float, bool] | None:
    """A constant number (sign included) and whether it is written as an integer; None if the
    tokens are not one."""
    sign = 1.0
    if len(tokens) == 2 and tokens[0].text in "+-":
        sign, tokens = (-1.0 if tokens[0].text == "-" else 1.0), tokens[1:]
    if len(tokens) != 1 or tokens[0].kind != "number":
        return None
    text = tokens[0].text
    value = sign * float(text)
    whole = re.fullmatch(r"\d+", text) is not None
    if not math.isfinite(value) or (whole and abs(value) > DOUBLE_EXACT):
        raise Unfit(f"a constant a double does not hold exactly ({text})")
    return value, whole


def _string(tokens: list[_Token]) -> str | None:
    if len(tokens) != 1 or tokens[0].kind != "string":
        return None
    body = tokens[0].text[1:-1]
    if re.search(r"\\|''|\"\"", body):
        raise Unfit("a string with escapes")
    return body


def _split(tokens: list[_Token], sep: str) -> list[list[_Token]]:
    """``tokens`` split at ``sep`` (a symbol, or a word in lower case) outside brackets."""
    depths, parts, start = _depths(tokens), [], 0
    for i, t in enumerate(tokens):
        if depths[i] == 0 and (t.word or t.text) == sep:
            parts.append(tokens[start:i])
            start = i + 1
    return [*parts, tokens[start:]]


def _range(value: str, op: str, c: float, whole: bool):
    """``value op c`` as a leaf (``!=`` the negation of ``=``)."""
    big = whole and abs(c) > FLOAT_EXACT
    if op in ("!=", "<>"):
        return _Leaf(Atom(value, c, c, big_integer=big), positive=False)
    lo, hi = {
        ">": (math.nextafter(c, math.inf), None),
        ">=": (c, None),
        "<": (None, math.nextafter(c, -math.inf)),
        "<=": (None, c),
        "=": (c, c),
        "==": (c, c),
    }[op]
    return _Leaf(Atom(value, lo, hi, big_integer=big))


def _predicate(tokens: list[_Token]):
    """One comparison, ``BETWEEN``, ``IN`` or ``IS [NOT] NULL`` as a leaf or a small tree."""
    depths = _depths(tokens)
    top = [i for i, d in enumerate(depths) if d == 0]
    words = {tokens[i].word: i for i in top if tokens[i].word}
    negated = "not" in words
    if "between" in words:
        b = words["between"]
        head = tokens[: b - 1] if negated and words["not"] == b - 1 else tokens[:b]
        bounds = _split(tokens[b + 1 :], "and")
        numbers = [_number(part) for part in bounds]
        if len(bounds) != 2 or None in numbers or (negated and words["not"] != b - 1):
            raise Unfit("a BETWEEN this module does not read")
        (lo, lo_whole), (hi, hi_whole) = numbers
        big = (lo_whole and abs(lo) > FLOAT_EXACT) or (hi_whole and abs(hi) > FLOAT_EXACT)
        return _Leaf(Atom(_expression(head), lo, hi, big_integer=big), positive=not negated)
    if "in" in words:
        i = words["in"]
        head = tokens[: i - 1] if negated and words["not"] == i - 1 else tokens[:i]
        listed = tokens[i + 1 :]
        if (negated and words["not"] != i - 1) or not listed or listed[0].text != "(":
            raise Unfit("an IN this module does not read")
        inside = depths[i + 2 : i + len(listed)]
        if listed[-1].text != ")" or min(inside, default=1) < 1:
            raise Unfit("an IN this module does not read")
        items = _split(listed[1:-1], ",")
        value = _expression(head)
        strings = [_string(x) for x in items]
        if None not in strings:
            return _Leaf(Atom(value, among=tuple(sorted(set(strings)))), positive=not negated)
        numbers = [_number(x) for x in items]
        if None in numbers:
            raise Unfit("an IN list of other than constants of one kind")
        equal = tuple(_range(value, "=", c, whole) for c, whole in numbers)
        tree = equal[0] if len(equal) == 1 else _Node("or", equal)
        return _negate(tree) if negated else tree
    if "is" in words:
        i = words["is"]
        rest = [t.word for t in tokens[i + 1 :]]
        if rest not in (["null"], ["not", "null"]):
            raise Unfit("an IS this module does not read")
        # No bracket: ``x IS NULL`` is how a record asked only whether it is there reads as
        # one field (``alertsieve.filtering.sql_text.only_existence``); a value compared binds
        # tighter than IS (``_expression``).
        value = f"CAST({_expression(tokens[:i])} IS NULL AS DOUBLE)"
        return _Leaf(Atom(value, *((1.0, 1.0) if rest == ["null"] else (0.0, 0.0))))
    ops = [i for i in top if tokens[i].text in _COMPARISONS]
    if len(ops) != 1:
        raise Unfit("not one comparison")
    k = ops[0]
    left, op, right = tokens[:k], tokens[k].text, tokens[k + 1 :]
    for side, other, used in ((right, left, op), (left, right, _FLIPPED[op])):
        text = _string(side) if len(side) == 1 and side[0].kind == "string" else None
        if text is not None:
            if used not in ("=", "==", "!=", "<>"):
                raise Unfit("strings compared by order")
            leaf = _Leaf(Atom(_expression(other), among=(text,)))
            return leaf if used in ("=", "==") else _negate(leaf)
        number = _number(side)
        if number is not None:
            return _range(_expression(other), used, *number)
    raise Unfit("a comparison without a constant side")


class _Reader:
    """``or := and (OR and)*``, ``and := not (AND not)*``, ``not := NOT not | ( or ) | predicate``:
    Spark's precedence of the boolean operators, ``BETWEEN``'s own ``AND`` kept with it."""

    def __init__(self, tokens: list[_Token]):
        self.tokens, self.depths, self.i = tokens, _depths(tokens), 0

    def peek(self) -> str:
        return self.tokens[self.i].word if self.i < len(self.tokens) else ""

    def read(self):
        node = self.disjunction()
        if self.i != len(self.tokens):
            raise Unfit(f"{self.tokens[self.i].text!r} where a condition ends")
        return node

    def disjunction(self):
        return self._joined("or", self.conjunction)

    def conjunction(self):
        return self._joined("and", self.negation)

    def _joined(self, op: str, part):
        parts = [part()]
        while self.peek() == op:
            self.i += 1
            parts.append(part())
        return parts[0] if len(parts) == 1 else _Node(op, tuple(parts))

    def negation(self):
        if self.peek() == "not":
            self.i += 1
            return _negate(self.negation())
        if self.i < len(self.tokens) and self.tokens[self.i].text == "(":
            close = self._closing(self.i)
            after = self.tokens[close + 1].word if close + 1 < len(self.tokens) else ""
            at_end = close + 1 == len(self.tokens) or self.tokens[close + 1].text == ")"
            if at_end or after in ("and", "or"):
                self.i += 1
                node = self.disjunction()
                if self.i != close:
                    raise Unfit("a bracket this module does not read")
                self.i += 1
                return node
        return _predicate(self._predicate_tokens())

    def _closing(self, i: int) -> int:
        depth = self.depths[i]
        for j in range(i + 1, len(self.tokens)):
            if self.depths[j] == depth and self.tokens[j].text == ")":
                return j
        raise Unfit("unbalanced brackets")

    def _predicate_tokens(self) -> list[_Token]:
        """The tokens up to the next ``AND``/``OR`` at this depth (``BETWEEN``'s own ``AND``
        kept) or the bracket that closes it."""
        start, between = self.i, False
        depth = self.depths[self.i] if self.i < len(self.tokens) else 0
        while self.i < len(self.tokens):
            t, d = self.tokens[self.i], self.depths[self.i]
            if d < depth or (d == depth and t.word in ("and", "or") and not between):
                break
            if d == depth and t.word == "between":
                between = True
            elif d == depth and t.word == "and":
                between = False
            self.i += 1
        return self.tokens[start : self.i]


# --- clauses ------------------------------------------------------------------------------------


def _simplified(clause: Clause) -> Clause | None:
    """The clause without repeated literals; None if two of its literals contradict."""
    out: dict[Literal, None] = {}
    accepted: dict[Atom, set[str]] = {}
    for atom, accept in clause:
        both = accepted.get(atom, {"t", "f", "u"}) & _ACCEPTS[accept]
        if not both:
            return None
        accepted[atom] = both
        out[(atom, accept)] = None
    return tuple(out)


def _times(a: list[Clause], b: list[Clause]) -> list[Clause]:
    out = [c for x, y in product(a, b) if (c := _simplified(x + y)) is not None]
    if len(out) > MAX_CLAUSES:
        raise Unfit(f"more than {MAX_CLAUSES} clauses")
    return out


def _true_and_not(node) -> tuple[list[Clause], list[Clause]]:
    """Disjoint clauses where ``node`` is true, and where it is not true (false or unknown)."""
    if isinstance(node, _Leaf):
        accept = TRUE if node.positive else FALSE
        return [((node.atom, accept),)], [((node.atom, _NEGATION[accept]),)]
    true, untrue = _true_and_not(node.parts[0])
    for part in node.parts[1:]:
        t, n = _true_and_not(part)
        if node.op == "and":  # true: both; not true: the first not, or it true and the second not
            true, untrue = _times(true, t), untrue + _times(true, n)
        else:  # true: the first, or it not true and the second; not true: neither
            true, untrue = true + _times(untrue, t), _times(untrue, n)
        if len(true) > MAX_CLAUSES or len(untrue) > MAX_CLAUSES:
            raise Unfit(f"more than {MAX_CLAUSES} clauses")
    return true, untrue


def clauses(sql: str) -> list[Clause]:
    """``sql``'s condition as disjoint clauses, each true exactly where the condition is true on
    it; raises ``Unfit`` for a condition this module does not read exactly (see the module)."""
    tokens = _tokens(sql)
    if not tokens:
        raise Unfit("an empty condition")
    true, _ = _true_and_not(_Reader(tokens).read())
    if any(len(c) > MAX_LITERALS for c in true):
        raise Unfit(f"a clause of more than {MAX_LITERALS} comparisons")
    return true


def compared_values(sql: str) -> list[str]:
    """The expressions ``sql``'s condition compares with constants, in order, when this module
    reads it (``Unfit`` otherwise, also where it has too many clauses to run as rows): the
    condition reads what they read, as ``alertsieve.filtering.references`` asks Spark."""
    tokens = _tokens(sql)
    if not tokens:
        raise Unfit("an empty condition")
    found: dict[str, None] = {}
    nodes = [_Reader(tokens).read()]
    while nodes:
        node = nodes.pop()
        if isinstance(node, _Leaf):
            found[node.atom.value] = None
        else:
            nodes.extend(reversed(node.parts))
    return list(found)


# --- as rows ------------------------------------------------------------------------------------

#: The Spark types (``simpleString``) whose values a double holds exactly.
EXACT_IN_DOUBLE = {"tinyint", "smallint", "int", "float", "double"}


def misread(clause_list: list[Clause], types: Mapping[str, str]) -> str | None:
    """Why the values these clauses compare cannot be read as doubles or strings (``types``: each
    value's Spark type, absent where Spark refused it), or None."""
    for clause in clause_list:
        for atom, _ in clause:
            kind = types.get(atom.value)
            if kind is None:
                return f"{atom.value}: not a value Spark reads here"
            if atom.strings and kind != "string":
                return f"{atom.value}: {kind} compared with strings"
            if not atom.strings and kind not in EXACT_IN_DOUBLE:
                return f"{atom.value}: {kind}, which a double does not hold exactly"
            if kind == "float" and atom.big_integer:
                return f"{atom.value}: a float compared with an integer beyond 2**24"
    return None


def clause_shapes(
    filters: Sequence[Filter], found: Mapping[int, list[Clause]], record: Callable[[Filter], tuple]
) -> list[Shape]:
    """The clause shapes of ``found`` (filter index -> its clauses, values already typed): one
    per record ``record(filter)`` publishes, a row per clause, each literal in ``SLOT_KINDS``
    columns (padded with nulls to the longest clause)."""
    numbers: dict[str, int] = {}
    strings: dict[str, int] = {}
    for clause_list in found.values():
        for clause in clause_list:
            for atom, _ in clause:
                index = strings if atom.strings else numbers
                index.setdefault(atom.value, len(index))
    slots = max((len(c) for cs in found.values() for c in cs), default=0)
    groups: dict[tuple, list[tuple[int, tuple]]] = {}
    for i, clause_list in found.items():
        rows = groups.setdefault(record(filters[i]), [])
        for clause in clause_list:
            values: list[object] = []
            for atom, (unknown, wanted) in clause:
                where = (strings if atom.strings else numbers)[atom.value]
                among = list(atom.among) if atom.strings else None
                values += [where, atom.lo, atom.hi, among, unknown, wanted]
            values += [None] * (len(SLOT_KINDS) * slots - len(values))
            rows.append((i, tuple(values)))
    return [
        Shape(
            lifted=None,
            members=tuple(i for i, _ in rows),
            constants=tuple(v for _, v in rows),
            record=key,
            numbers=tuple(numbers),
            strings=tuple(strings),
            slots=slots,
        )
        for key, rows in groups.items()
    ]
