"""Reading names out of a filter's SQL text without parsing it.

Start-up checks look for the names an expression reads (a catalog, the features, a field
asked only for its existence). Words inside string literals are data, not names: a filter
``note = 'xmatch.hipparcos'`` reads no catalog, so literals are blanked before any search.
"""

from __future__ import annotations

import re

_STRINGS = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def without_strings(expression: str) -> str:
    """``expression`` with every quoted literal replaced by ``''``."""
    return _STRINGS.sub("''", expression)
