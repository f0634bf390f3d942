"""SQL filters are untrusted input: what their text may hold, decided before any of it runs.

A broker holds thousands of users' SQL conditions (filter modules, filter tables, rows of
parameters). Spark would run any of them with the job's own rights: ``java_method`` calls any
static Java method (``System.exit``, ``System.getenv`` where a broker's password is kept),
``repeat('x', 500000000)`` builds half a gigabyte per alert, a pattern such as ``(a+)+`` can
backtrack for minutes on one string. So each expression is parsed with Spark's own parser and
every node of its tree is held against allowlists:

- **operators** (``ALLOWED_NODES``): comparisons, arithmetic, ``CASE``, ``CAST``, ``LIKE``,
  lambdas over the alert's own arrays, field access; no subquery, window, parameter marker or
  ``IDENTIFIER(...)`` (a function named at run time);
- **functions** (``ALLOWED_FUNCTIONS``): Spark's deterministic, side-effect-free built-ins that
  make sense over one alert; everything else is refused with its reason (``REFUSED``): a
  nondeterministic function (``rand``) because a replayed batch must publish the same matches
  (``xxhash64(objectId) % 100 < 10`` samples one alert in ten, the same ones every time);
- **sizes** (``BUILDERS``): a function that builds a value of a size it is given (``repeat``,
  ``sequence``, ``lpad``, ...) must be given a constant, and the product of the sizes of such
  functions nested in one another is at most ``MAX_BUILT`` (a lambda over a built array is
  nested in it: ``transform(sequence(1, n), x -> sequence(1, m))`` builds n times m);
- **patterns** (``PATTERN_ARGUMENTS``): a regular expression is a constant of at most
  ``MAX_PATTERN`` characters, with no quantified group that holds a quantifier or an
  alternative (``(a+)+``, ``(a|aa)*``: exponential backtracking) and no back-reference.

The text itself is bounded first (``MAX_SQL_CHARS``, ``MAX_DEPTH``): the parser recurses.
Parameters never reach the text as text: ``fill`` writes each as a typed literal.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alertsieve.errors import AlertsieveError
from alertsieve.filtering.sql_text import without_strings
from alertsieve.spark.constants import sql_constant

#: The longest SQL expression taken (a watch list belongs in a catalog: ``watch.<name>``).
MAX_SQL_CHARS = 20_000
#: The deepest nesting of brackets taken.
MAX_DEPTH = 64
#: The most characters or elements one value may be built to, nested builders multiplied.
MAX_BUILT = 10_000
#: The longest regular expression taken.
MAX_PATTERN = 1_000

#: Parser nodes (Spark's class names) a filter may hold; functions called by name are
#: ``UnresolvedFunction`` nodes, checked against ``ALLOWED_FUNCTIONS``.
ALLOWED_NODES = frozenset(
    {
        "And", "Or", "Not", "EqualTo", "EqualNullSafe", "GreaterThan", "GreaterThanOrEqual",
        "LessThan", "LessThanOrEqual", "In", "IsNull", "IsNotNull", "IsUnknown", "IsNotUnknown",
        "Literal", "Add", "Subtract", "Multiply", "Divide", "Remainder", "IntegralDivide",
        "UnaryMinus", "UnaryPositive", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
        "Cast", "CaseWhen", "If", "Like", "ILike", "RLike", "LikeAny", "NotLikeAny", "LikeAll",
        "NotLikeAll", "Concat", "StringTrim", "StringTrimLeft", "StringTrimRight", "StringTrimBoth",
        "Substring", "StringLocate", "Overlay", "CreateNamedStruct", "CreateArray",
        "LambdaFunction", "UnresolvedNamedLambdaVariable", "UnresolvedAttribute", "Alias",
        "UnresolvedExtractValue", "UnresolvedFunction", "Collate", "UnresolvedCollation",
    }
)  # fmt: skip

#: Spark's built-ins (4.2) a filter may call: pure functions of their arguments (checked against
#: Spark's registry by the tests, so a name that is not Spark's fails there).
ALLOWED_FUNCTIONS = frozenset(
    # comparisons, logic, conditionals
    """= == != <> < <= > >= <=> ! and or not in between isnull isnotnull isnan equal_null
    like ilike rlike regexp regexp_like case if ifnull nvl nvl2 nullif nullifzero zeroifnull
    coalesce nanvl when greatest least
    """
    # arithmetic and mathematics
    """+ - * / % div mod pmod abs negative positive sign signum ceil ceiling floor round bround
    rint sqrt cbrt exp expm1 ln log log10 log1p log2 pow power hypot e pi sin cos tan cot sec
    csc asin acos atan atan2 sinh cosh tanh asinh acosh atanh degrees radians factorial bin hex
    unhex conv width_bucket try_add try_subtract try_multiply try_divide try_mod
    & | ^ ~ << >> >>> shiftleft shiftright shiftrightunsigned bit_count bit_get getbit
    """
    # conversions
    """cast try_cast bigint binary boolean date decimal double float int smallint string time
    timestamp tinyint typeof
    """
    # strings
    """ascii base64 unbase64 bit_length btrim char chr char_length character_length concat
    concat_ws contains decode encode elt endswith startswith find_in_set format_number
    format_string printf initcap instr is_valid_utf8 lcase ucase lower upper left right len
    length levenshtein locate lpad rpad ltrim rtrim trim luhn_check make_valid_utf8 mask
    octet_length overlay position quote regexp_count regexp_extract regexp_extract_all
    regexp_instr regexp_replace regexp_substr repeat replace reverse sentences soundex space
    split split_part substr substring substring_index to_binary try_to_binary to_char
    to_varchar to_number try_to_number translate try_validate_utf8 validate_utf8 collate
    collation url_decode try_url_decode url_encode parse_url try_parse_url
    """
    # arrays, maps, structs, higher-order functions over the alert's own arrays
    """array array_append array_compact array_contains array_distinct array_except array_insert
    array_intersect array_join array_max array_min array_position array_prepend array_remove
    array_repeat array_size array_union arrays_overlap arrays_zip flatten get sequence slice
    sort_array cardinality size element_at try_element_at map map_concat map_contains_key
    map_entries map_from_arrays map_from_entries map_keys map_values str_to_map named_struct
    struct aggregate reduce array_sort exists filter forall transform transform_keys
    transform_values map_filter map_zip_with zip_with
    """
    # hashes (a deterministic sample: ``xxhash64(objectId) % 100 < 10``)
    """crc32 hash md5 sha sha1 sha2 xxhash64
    """
    # times, over the alert's own times (not the clock: ``REFUSED``)
    """add_months date_add date_sub dateadd date_diff datediff date_format date_from_unix_date
    date_part datepart date_trunc day dayname dayofmonth dayofweek dayofyear extract
    from_unixtime hour last_day make_date make_dt_interval make_interval make_time
    make_timestamp make_timestamp_ltz make_timestamp_ntz make_ym_interval minute month monthname
    months_between next_day quarter second timestamp_micros timestamp_millis timestamp_seconds
    to_date to_time to_timestamp to_timestamp_ltz to_timestamp_ntz to_unix_timestamp
    unix_timestamp unix_date unix_micros unix_millis unix_seconds trunc try_make_interval
    try_make_timestamp try_make_timestamp_ltz try_make_timestamp_ntz try_to_date try_to_time
    try_to_timestamp weekday weekofyear year convert_timezone from_utc_timestamp
    to_utc_timestamp time_diff time_trunc time_from_micros time_from_millis time_from_seconds
    time_to_micros time_to_millis time_to_seconds
    """
    # JSON strings of the alert
    """from_json get_json_object json_array_length json_object_keys to_json
    """
    # vectors
    """vector_cosine_similarity vector_inner_product vector_l2_distance vector_norm
    vector_normalize
    """.split()
)

#: Why a function is refused, for the ones a user is likely to try (any other function not on
#: the list is refused as "not on the list of functions a filter may call").
_CLOCK = "reads the clock: a replayed batch would publish other matches"
_RANDOM = (
    "is random: a replayed batch would publish other matches (for a deterministic sample,"
    " xxhash64(objectId) % 100 < 10)"
)
_JVM = "calls Java code by name: it could stop the job or read its secrets"
_MANY = "aggregates over many rows: a filter is a condition over one alert"
REFUSED = {
    "java_method": _JVM,
    "reflect": _JVM,
    "try_reflect": _JVM,
    "raise_error": "raises an error on purpose: it would stop every filter's batch",
    "assert_true": "raises an error on purpose: it would stop every filter's batch",
    "rand": _RANDOM,
    "randn": _RANDOM,
    "random": _RANDOM,
    "uniform": _RANDOM,
    "randstr": _RANDOM,
    "shuffle": _RANDOM,
    "uuid": _RANDOM,
    "monotonically_increasing_id": "depends on where Spark runs the alert, not on the alert",
    "spark_partition_id": "depends on where Spark runs the alert, not on the alert",
    "input_file_name": "depends on where Spark runs the alert, not on the alert",
    "current_date": _CLOCK,
    "current_timestamp": _CLOCK,
    "current_time": _CLOCK,
    "curdate": _CLOCK,
    "now": _CLOCK,
    "localtimestamp": _CLOCK,
    "current_timezone": "reads the job's settings",
    "current_user": "reads who runs the job",
    "user": "reads who runs the job",
    "session_user": "reads who runs the job",
    "current_database": "reads the job's catalog",
    "current_schema": "reads the job's catalog",
    "current_catalog": "reads the job's catalog",
    "version": "reads the job's Spark version",
    "aes_encrypt": "takes a key: nothing a filter needs",
    "aes_decrypt": "takes a key: nothing a filter needs",
    "try_aes_decrypt": "takes a key: nothing a filter needs",
    "from_protobuf": "reads a descriptor file from the job's disk",
    "to_protobuf": "reads a descriptor file from the job's disk",
    "from_avro": "decodes with a schema of its own: the job decodes the alert once",
    "python_worker_logs": "reads the job's logs",
    **dict.fromkeys(("count", "sum", "avg", "min", "max", "collect_list", "first"), _MANY),
}
#: Names that Spark reads as a function without brackets (``current_date``): refused as fields.
_BARE_FUNCTIONS = {n for n, why in REFUSED.items() if why in (_CLOCK,) or n.startswith("current")}
_BARE_FUNCTIONS |= {"user", "session_user", "current_path"}

#: Functions that build a value of a size given as an argument: name -> the argument's index.
BUILDERS = {"repeat": 1, "space": 0, "lpad": 1, "rpad": 1, "array_repeat": 1}
#: Functions whose argument at these indices is a regular expression.
PATTERN_ARGUMENTS = {
    "rlike": (1,),
    "regexp": (1,),
    "regexp_like": (1,),
    "regexp_count": (1,),
    "regexp_extract": (1,),
    "regexp_extract_all": (1,),
    "regexp_instr": (1,),
    "regexp_replace": (1,),
    "regexp_substr": (1,),
    "split": (1,),
    "str_to_map": (1, 2),
}
_WIDTH = re.compile(r"%[-#+ 0,(<]*(\d*)(?:\.(\d+))?[a-zA-Z%]")


class UntrustedSqlError(AlertsieveError, ValueError):
    """An expression or a parameter a filter may not hold; the message says what and why."""


@dataclass
class _Node:
    kind: str  # Spark's class name, without its package
    fields: dict
    children: list[_Node]

    @property
    def function(self) -> str:
        """A called function's name (``UnresolvedFunction``), in lower case; '' otherwise."""
        parts = _parts(self.fields.get("nameParts", ""))
        return ".".join(parts).lower() if self.kind == "UnresolvedFunction" else ""

    def constant(self) -> Any:
        """The Python value of a literal (a negated number included); None if not one."""
        if self.kind == "UnaryMinus" and len(self.children) == 1:
            inner = self.children[0].constant()
            return -inner if isinstance(inner, (int, float)) else None
        if self.kind != "Literal" or self.fields.get("value") is None:
            return None
        value, dtype = self.fields["value"], self.fields.get("dataType", "")
        if dtype in ("integer", "long", "short", "byte"):
            return int(value)
        if dtype == "double" or dtype.startswith("decimal"):
            return float(value)
        return value if dtype == "string" else None


def _parts(text: str) -> list[str]:
    """``[a, b]`` (how Spark's JSON writes a name's parts) -> ['a', 'b']."""
    inner = text.strip()[1:-1] if text.strip().startswith("[") else text
    return [p.strip() for p in inner.split(",") if p.strip()]


def tree(nodes: list[dict]) -> _Node:
    """The tree of Spark's ``toJSON`` of an expression (its nodes in pre-order, each with its
    number of children), built without recursion: a long ``AND`` chain is deep."""
    built: list[_Node] = []
    stack: list[tuple[_Node, int]] = []  # (node, children still to come)
    root = None
    for raw in nodes:
        kind = raw["class"].rsplit(".", 1)[-1].split("$", 1)[0]
        node = _Node(kind, raw, [])
        built.append(node)
        if stack:
            parent, left = stack[-1]
            parent.children.append(node)
            stack[-1] = (parent, left - 1)
        else:
            root = node
        while stack and stack[-1][1] == 0:
            stack.pop()
        if raw.get("num-children", 0):
            stack.append((node, raw["num-children"]))
    if root is None:
        raise UntrustedSqlError("an empty expression")
    return root


def text_refusal(sql: str) -> str | None:
    """Why ``sql`` is too long or too deep to parse, or None."""
    if len(sql) > MAX_SQL_CHARS:
        return (
            f"it is {len(sql):,} characters, above {MAX_SQL_CHARS:,} (a long list of values"
            " belongs in a watch catalog: watch.<name>)"
        )
    depth = deepest = 0
    for c in without_strings(sql):
        depth += c == "("
        depth -= c == ")"
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        return f"its brackets nest {deepest} deep, above {MAX_DEPTH}"
    return None


def refusal(root: _Node) -> str | None:
    """Why the parsed expression ``root`` may not run as a filter, or None: the first node, in
    reading order, that no allowlist takes."""
    stack: list[tuple[_Node, int]] = [(root, 1)]  # (node, the sizes built around it)
    while stack:
        node, around = stack.pop()
        why = _node_refusal(node)
        if why:
            return why
        size = _built_size(node)
        if isinstance(size, str):
            return size
        if size is not None and around * size > MAX_BUILT:
            nested = " (nested builders multiply)" if around > 1 else ""
            return (
                f"{node.function}(...) builds {around * size:,} characters or elements{nested},"
                f" above {MAX_BUILT:,}"
            )
        inner = around * (size or 1)
        width = _lambda_width(node)  # a lambda runs once per element of its array
        stack.extend(
            (child, inner * width if child.kind == "LambdaFunction" else inner)
            for child in reversed(node.children)
        )
    return None


def _lambda_width(node: _Node) -> int:
    """How many times a lambda argument of ``node`` may run over a built array: the largest
    size built inside each of its other arguments, multiplied (1 where none is built: the
    alert's own arrays are bounded by the alert)."""
    if not any(c.kind == "LambdaFunction" for c in node.children):
        return 1
    width = 1
    for child in node.children:
        if child.kind != "LambdaFunction":
            width *= _largest_built(child)
    return width


def _largest_built(root: _Node) -> int:
    """The largest constant size a builder inside ``root`` is given (1 if none)."""
    largest, stack = 1, [root]
    while stack:
        node = stack.pop()
        size = _built_size(node)
        if isinstance(size, int):
            largest = max(largest, size)
        stack.extend(node.children)
    return largest


def _node_refusal(node: _Node) -> str | None:
    if node.kind not in ALLOWED_NODES:
        return f"{_described(node)} is not allowed in a filter (a condition over one alert)"
    if node.kind == "UnresolvedAttribute":
        parts = _parts(node.fields.get("nameParts", ""))
        if len(parts) == 1 and parts[0].lower() in _BARE_FUNCTIONS:
            name = parts[0].lower()
            return f"{name} {REFUSED.get(name, 'reads the job, not the alert')}"
        return None
    if node.kind == "RLike":
        return _pattern_refusal("RLIKE", node.children[1])
    name = node.function
    if not name:
        return None
    if name in REFUSED:
        return f"{name}(...) {REFUSED[name]}"
    if name not in ALLOWED_FUNCTIONS:
        return (
            f"{name}(...) is not on the list of functions a filter may call"
            " (docs/operating.md, untrusted filters)"
        )
    for at in PATTERN_ARGUMENTS.get(name, ()):
        if at < len(node.children):
            why = _pattern_refusal(f"{name}(...)", node.children[at])
            if why:
                return why
    if name in ("unix_timestamp", "to_unix_timestamp") and not node.children:
        return f"{name}() without an argument {_CLOCK}"
    if name in ("format_string", "printf") and node.children:
        return _format_refusal(name, node.children[0])
    return None


def _described(node: _Node) -> str:
    names = {
        "ScalarSubquery": "a subquery",
        "Exists": "a subquery (EXISTS)",
        "ListQuery": "a subquery (IN)",
        "InSubquery": "a subquery (IN)",
        "WindowExpression": "a window (OVER)",
        "NamedParameter": "a parameter marker (:name): parameters are {name}",
        "PosParameter": "a parameter marker (?): parameters are {name}",
        "ExpressionWithUnresolvedIdentifier": "IDENTIFIER(...), a name chosen at run time,",
        "UnresolvedStar": "* (every column)",
    }
    return names.get(node.kind, f"{node.kind} (Spark's name for it)")


def _built_size(node: _Node) -> int | str | None:
    """The size ``node`` builds (a builder's constant argument), a refusal when the argument is
    not a constant, or None when ``node`` builds nothing of a size it is given."""
    name = node.function
    if name == "sequence":
        ends = [c.constant() for c in node.children]
        if len(ends) < 2 or not all(isinstance(e, int) for e in ends):
            return "sequence(...) takes constant integers (start, stop[, step]) in a filter"
        step = ends[2] if len(ends) > 2 else 1
        return abs(ends[1] - ends[0]) // max(abs(step), 1) + 1
    if name == "format_number" and len(node.children) > 1:
        digits = node.children[1].constant()
        if isinstance(digits, int) and digits <= MAX_BUILT:
            return max(digits, 1)
        if node.children[1].kind == "Literal" and isinstance(digits, str):
            return len(digits)
        return f"format_number(...)'s decimals are a constant up to {MAX_BUILT:,} in a filter"
    if name not in BUILDERS:
        return None
    at = BUILDERS[name]
    size = node.children[at].constant() if at < len(node.children) else None
    if not isinstance(size, int):
        return f"{name}(...)'s size (argument {at + 1}) is a constant in a filter"
    return max(size, 1)


def _format_refusal(name: str, fmt: _Node) -> str | None:
    text = fmt.constant()
    if not isinstance(text, str):
        return f"{name}(...)'s format is a constant in a filter"
    for width, precision in _WIDTH.findall(text):
        if int(width or 0) > MAX_BUILT or int(precision or 0) > MAX_BUILT:
            return f"{name}(...)'s format pads to more than {MAX_BUILT:,} characters"
    return None


def _pattern_refusal(where: str, pattern: _Node) -> str | None:
    text = pattern.constant()
    if not isinstance(text, str):
        return f"{where}'s pattern is a constant string in a filter"
    why = pattern_refusal(text)
    return f"{where}'s pattern {text!r} {why}" if why else None


def pattern_refusal(pattern: str) -> str | None:
    """Why a regular expression may backtrack without bound (or is too long), or None: a
    repeated group that holds a repetition or an alternative (``(a+)+``, ``(a|aa)*``), or a
    back-reference. What is left (``a.*b.*c``) backtracks at worst polynomially in the length
    of one alert's string."""
    if len(pattern) > MAX_PATTERN:
        return f"is {len(pattern)} characters, above {MAX_PATTERN}"
    held: list[bool] = []  # per open group: whether it holds a repetition or an alternative
    after_held = False  # the last token closed a group that held one
    i = 0
    while i < len(pattern):
        c = pattern[i]
        repeat = _REPEAT.match(pattern, i)
        if repeat:
            if after_held and repeat.group(1) != "?":
                return "repeats a group that repeats or has alternatives (it can backtrack without bound)"
            if held:
                held[-1] = True
            after_held = False
            i = repeat.end()
            continue
        after_held = False
        if c == "\\":
            if re.match(r"\\([1-9]|k<)", pattern[i:]):
                return "has a back-reference (it can backtrack without bound)"
            i += 2
        elif c == "[":
            end = _class_end(pattern, i)
            if end is None:
                return "has an unclosed character class"
            i = end + 1
        elif c == "(":
            flags = _INLINE_FLAGS.match(pattern, i)
            if flags:
                i = flags.end()
                continue
            held.append(False)
            modifier = _GROUP_KIND.match(pattern, i + 1)
            i = modifier.end() if modifier else i + 1
        elif c == ")":
            if not held:
                return "has an unbalanced bracket"
            after_held = held.pop()
            if held:
                held[-1] = held[-1] or after_held
            i += 1
        else:
            if c == "|" and held:
                held[-1] = True
            i += 1
    return "has an unbalanced bracket" if held else None


#: A repetition (its kind: ``*``, ``+``, ``?`` or ``{``) and its lazy or possessive mark.
_REPEAT = re.compile(r"([*+?]|\{\d+(?:,\d*)?\})[?+]?")
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z-]*\)")
_GROUP_KIND = re.compile(r"\?(?::|=|!|>|<=|<!|<\w+>|[a-zA-Z-]+:)")


def _class_end(pattern: str, start: int) -> int | None:
    """The index of the ``]`` closing the character class opened at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    depth = 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            depth += 1
        elif pattern[i] == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def refusals(spark, expressions: Sequence[str]) -> list[str | None]:
    """Why each of ``expressions`` may not run as a filter (None where it may). They are parsed
    by Spark's parser together, in chunks (one call and one tree for hundreds); a chunk whose
    text does not split back into its expressions (one that fails to parse, or whose brackets
    close early) is parsed one by one. One that does not parse is not refused here: it cannot
    run, and its analysis says why."""
    out: list[str | None] = [text_refusal(sql) for sql in expressions]
    todo = [i for i, why in enumerate(out) if why is None]
    parser = spark._jsparkSession.sessionState().sqlParser()
    for start in range(0, len(todo), _CHUNK):
        chunk = todo[start : start + _CHUNK]
        roots = _parsed_together(parser, [expressions[i] for i in chunk])
        if roots is None:
            roots = [_parsed(parser, expressions[i]) for i in chunk]
        for i, root in zip(chunk, roots, strict=True):
            out[i] = None if root is None else refusal(root)
    return out


_CHUNK = 500


def _parsed_together(parser, expressions: list[str]) -> list[_Node] | None:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    text = "array(" + ", ".join(f"({sql}\n)" for sql in expressions) + ")"
    try:
        root = tree(json.loads(parser.parseExpression(text).toJSON()))
    except (Py4JError, PySparkException, UntrustedSqlError, ValueError):
        return None
    if root.function != "array" or len(root.children) != len(expressions):
        return None
    return root.children


def _parsed(parser, sql: str) -> _Node | None:
    """One expression's tree; None when it does not parse (the analysis that follows says why
    in Spark's words, as for any filter)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        return tree(json.loads(parser.parseExpression(sql).toJSON()))
    except (Py4JError, PySparkException):
        return None


# --- parameters ---------------------------------------------------------------------------------

_SQL_PIECE = re.compile(
    r"(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<quoted>`[^`]*`)"
    r"|(?P<comment>--[^\n]*|/\*.*?\*/)"
    r"|(?P<brace>\{\{|\}\})"
    r"|(?P<param>\{[^{}]*\})",
    flags=re.S,
)
_PARAM_NAME = re.compile(r"[A-Za-z_]\w*")
_NAMED = re.compile(r"(?<!\{)\{[A-Za-z_]\w*\}(?!\})")


def placeholders(sql: str) -> list[str]:
    """The ``{name}`` placeholders of ``sql`` outside comments and quoted names, in order (a
    string literal that is only a placeholder, ``'{sign}'``, counts as one)."""
    out = []
    for m in _SQL_PIECE.finditer(sql):
        if m.lastgroup == "param":
            out.append(m.group()[1:-1])
        elif m.lastgroup == "string" and re.fullmatch(r".\{[^{}]*\}.", m.group(), flags=re.S):
            out.append(m.group()[2:-2])
    return out


def fill(sql: str, params: Mapping[str, Any]) -> str:
    """``sql`` with each ``{name}`` replaced by its parameter as a typed SQL literal: a number,
    a boolean, or a string quoted and escaped, whatever it holds (``'{name}'``, a string
    literal that is only a placeholder, is the same literal). ``{{`` and ``}}`` are braces;
    braces in a string that hold no name (a pattern's ``{7}``) are left as they are. A
    ``{name}`` inside a longer string, or braces outside strings that hold no plain name, are
    refused; an undeclared name raises ``KeyError`` with it."""

    def value(name: str) -> str:
        if not _PARAM_NAME.fullmatch(name):
            raise UntrustedSqlError(f"{{{name}}} is not a parameter: parameters are {{name}}")
        return literal(name, params[name])

    def piece(m: re.Match) -> str:
        kind, text = m.lastgroup, m.group()
        if kind == "param":
            return value(text[1:-1])
        if kind == "brace":
            return text[0]
        if kind != "string":
            return text
        if re.fullmatch(r".\{[A-Za-z_]\w*\}.", text, flags=re.S):
            return value(text[2:-2])
        if _NAMED.search(text):
            raise UntrustedSqlError(
                f"a parameter inside the string {text}: write the string as the parameter's"
                " value, or concat('...', {name}, '...')"
            )
        return text.replace("{{", "{").replace("}}", "}")  # a pattern's {7}: no parameter

    return _SQL_PIECE.sub(piece, sql)


def literal(name: str, value: Any) -> str:
    """``value`` as a SQL literal of its type (``sql_constant``; a float as Python writes it,
    which Spark reads as it did the text, non-finite ones cast); another type is refused."""
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
        return repr(value)
    if isinstance(value, bool | int | str):
        return sql_constant(value)
    raise UntrustedSqlError(
        f"parameter {name!r} is a {type(value).__name__} ({value!r}): a SQL filter's parameters"
        " are numbers, strings or booleans"
    )
