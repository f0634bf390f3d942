"""Python constants in expressions that hold thousands of them: one literal each, not one node
per constant.

A column built in Python costs a call to the JVM per constant (``F.lit``, about half a
millisecond): the labels of ten thousand filters' rows, or the reasons a decoder gives for the
writers of a schema store, took tens of seconds of start-up that way. Written as SQL text
(``array(...)``), an array is one call, but it is an expression of ten thousand literals, and a
streaming query optimises its plan again at every batch: the job of 10,000 filters spent 0.9 s
of each batch there, half of it on these arrays. So an array is one string literal, split once
when the plan is optimised (``split`` of a literal is folded to one array literal), with
``NULL`` standing for a missing value and bytes as hex (``constant_at``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def sql_constant(value: Any) -> str:
    """``value`` (None, a bool, an int, a str or bytes) as Spark SQL reads it back: strings
    quoted with backslash escapes (Spark's default reading), bytes as ``X'..'``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    raise TypeError(f"no SQL constant for {type(value).__name__} {value!r}")


#: Between the values of a constant array's string, and a missing value (neither is in a name,
#: a topic, a version or hex).
SEPARATOR, NULL = "\x1f", "\x1e"


def _joined(values: Iterable[Any]) -> str | None:
    """The values as one string for ``split``; None when one holds ``SEPARATOR`` or ``NULL``."""
    texts = []
    for v in values:
        if v is None:
            texts.append(NULL)
        elif isinstance(v, bytes | bytearray):
            texts.append(bytes(v).hex())
        elif isinstance(v, bool | int | str):
            text = str(v).lower() if isinstance(v, bool) else str(v)
            if SEPARATOR in text or NULL in text:
                return None
            texts.append(text)
        else:
            raise TypeError(f"no SQL constant for {type(v).__name__} {v!r}")
    return SEPARATOR.join(texts)


def constant_array(values: Iterable[Any], element: str):
    """A column: the array of ``values`` (none missing) typed ``array<element>`` (``string``,
    ``int``, ``bigint``), one literal once the plan is optimised."""
    from pyspark.sql import functions as F

    values = list(values)
    joined = _joined(values)
    if joined is None or not values or element == "binary" or None in values:
        return constant_array_text(values, element)
    return F.split(F.lit(joined), SEPARATOR).cast(f"array<{element}>")


def constant_at(values: Iterable[Any], element: str, position):
    """A column: ``values[position - 1]`` (``position``, a column, 1-based as ``element_at``)
    typed ``element`` (``string``, ``int``, ``bigint``, ``binary``), null where the value is
    None; the values one literal once the plan is optimised."""
    from pyspark.sql import functions as F

    values = list(values)
    joined = _joined(values)
    if joined is None or not values:
        return F.element_at(constant_array_text(values, element), position)
    if element != "binary" and None not in values:  # a typed array literal: nothing per row
        return F.element_at(constant_array(values, element), position)
    found = F.element_at(F.split(F.lit(joined), SEPARATOR), position)
    if None in values:
        found = F.nullif(found, F.lit(NULL))
    if element == "binary":
        return F.unhex(found)
    return found if element == "string" else found.cast(element)


def constant_array_text(values: Iterable[Any], element: str):
    """The array of ``values`` as SQL text (any value, None and bytes included): an expression
    of a literal per value."""
    from pyspark.sql import functions as F

    listed = ", ".join(sql_constant(v) for v in values)
    return F.expr(f"CAST(array({listed}) AS array<{element}>)")
