"""pandas, imported when a table is asked for (the package works without it)."""

from __future__ import annotations

from typing import Any, Optional, Sequence


def pandas(what: str = "pagelab"):
    """The pandas module, or an ImportError that says ``what`` needs it."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(f"{what} needs pandas, which is not installed: pip install pandas") from e
    return pd


def frame(rows: Sequence[Any], columns: Optional[Sequence[str]] = None, what: str = "pagelab"):
    """A DataFrame of ``rows`` (lists, with ``columns``, or dicts)."""
    return pandas(what).DataFrame(list(rows), columns=None if columns is None else list(columns))
