"""Python constants as Spark SQL text, for expressions that hold thousands of them.

A column built in Python costs a call to the JVM per constant (``F.lit``, about half a
millisecond): the labels of ten thousand filters' rows, or the reasons a decoder gives for the
writers of a schema store, took tens of seconds of start-up that way. Written as SQL text, each
array is one call, and Spark parses it to the same literals.
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


def constant_array(values: Iterable[Any], element: str):
    """A column: the array of ``values`` typed ``array<element>`` (``string``, ``int``,
    ``bigint``, ``binary``), in one call to the JVM."""
    from pyspark.sql import functions as F

    listed = ", ".join(sql_constant(v) for v in values)
    return F.expr(f"CAST(array({listed}) AS array<{element}>)")
