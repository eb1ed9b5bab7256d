"""Read the experiment store's rows defensively: every field checked, what is wrong said in words, nothing raised.

A row the lab did not write whole (a crash mid-write, an older version, a hand edit, a bug) still reads:
a field that cannot be read takes its empty value and the row's problems say which field and why, so a
page can show the row as broken, leave it out of any result, and offer to delete it.
"""
from __future__ import annotations

import json
import math
import sqlite3

from app.metrics.catalog import BY_KEY

# Figures that must be numbers (or absent) wherever they appear: the catalog's, and the counts behind them.
NUMERIC = (set(BY_KEY) - {"fail_by_reason"}) | {"sent", "requests", "latency_n", "seconds", "retries"}
_SHORT = 60  # how much of a wrong value a message quotes


def short(value: object) -> str:
    """Return a value as a message quotes it: repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _SHORT else text[:_SHORT - 1] + "…"


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def is_number(value: object) -> bool:
    """Return True for an int or float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class RowReader:
    """One stored row's fields, each read as what it should be; `problems` says what was not."""

    def __init__(self, row: sqlite3.Row) -> None:
        self.row = row
        self.columns = set(row.keys())
        self.problems: list[str] = []

    def wrong(self, text: str) -> None:
        """Record what is wrong with the row."""
        self.problems.append(text)

    def _raw(self, col: str):
        return self.row[col] if col in self.columns else None

    def text(self, col: str, required: bool = True) -> str:
        """Return a text column ('' when it is missing or not text)."""
        value = self._raw(col)
        if isinstance(value, str):
            return value
        if value is None:
            if required:
                self.wrong(f"{col} is missing")
            return ""
        self.wrong(f"{col} is {_kind(value)} ({short(value)}), not text")
        return ""

    def number(self, col: str, required: bool = False) -> float | None:
        """Return a number column (None when it is missing or not a number)."""
        value = self._raw(col)
        if value is None:
            if required:
                self.wrong(f"{col} is missing")
            return None
        if not is_number(value) or math.isnan(value):
            self.wrong(f"{col} is {short(value)}, not a number")
            return None
        return value

    def integer(self, col: str) -> int | None:
        """Return an integer column (None when it is missing or not a whole number)."""
        value = self.number(col)
        if value is None:
            return None
        if not math.isfinite(value) or value != int(value):
            self.wrong(f"{col} is {short(value)}, not a whole number")
            return None
        return int(value)

    def json(self, col: str, expected: type, default):
        """Return a JSON column parsed, when it holds `expected` (dict or list); else default, said why."""
        raw = self._raw(col)
        if raw is None:
            self.wrong(f"{col} is missing")
            return default
        try:
            value = json.loads(raw)
        except (TypeError, ValueError) as exc:
            self.wrong(f"{col} is not valid JSON ({exc}): {short(raw)}")
            return default
        if not isinstance(value, expected):
            self.wrong(f"{col} is {_kind(value)}, not {_kind(expected())}")
            return default
        return value

    def figures(self, col: str, per_class: bool) -> dict:
        """Return figures ({key: number} or, per_class, {class: {key: number}}) with every value that must be a
        number checked: NaN reads as absent; anything else not a number is dropped and said."""
        values = self.json(col, dict, {})
        if not per_class:
            return self._numbers(values, col)
        out = {}
        for cls, row in values.items():
            if isinstance(row, dict):
                out[cls] = self._numbers(row, f"{col}[{cls!r}]")
            else:
                self.wrong(f"{col}[{cls!r}] is {_kind(row)}, not a mapping of figures")
        return out

    def _numbers(self, values: dict, where: str) -> dict:
        out = {}
        for key, value in values.items():
            if key in NUMERIC and value is not None:
                if not is_number(value):
                    self.wrong(f"{where} figure {key!r} is {short(value)}, not a number")
                    value = None
                elif math.isnan(value):
                    value = None  # JSON's NaN: a figure that could not be computed, the same as absent
            out[key] = value
        return out

    def listing_of_mappings(self, col: str) -> list:
        """Return a JSON list whose items are mappings (measurement windows); [] and said when it is not."""
        values = self.json(col, list, [])
        if any(not isinstance(v, dict) for v in values):
            self.wrong(f"{col} holds an item that is not a mapping")
            return []
        return values

    @property
    def broken(self) -> str:
        """Return what is wrong with the row, '' when nothing is."""
        return "; ".join(self.problems)
