"""Strict JSON for untrusted files (see :mod:`suite.files`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from suite.files.bounded import MAX_DEPTH, MAX_FLOAT_CHARS, MAX_INT_DIGITS, FileProblem, read_bounded


def _number_problem(message: str) -> FileProblem:
    return FileProblem("bad-number", message, "submit the file as trainbench wrote it; no measurement needs this")


def _reject_constant(name: str) -> Any:
    raise FileProblem(
        "non-finite-number",
        f"the number {name} is not JSON and never a valid measurement",
        "re-run: a result with NaN or Infinity is broken; trainbench never writes one",
    )


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _number_problem(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS} are read)")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > MAX_FLOAT_CHARS:
        raise _number_problem(f"a number literal of {len(text)} characters (at most {MAX_FLOAT_CHARS} are read)")
    value = float(text)
    if not math.isfinite(value):
        _reject_constant(text)
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FileProblem(
                "duplicate-key",
                f"the key {key!r} appears twice in one object",
                "remove the repeated key; parsers disagree on which value wins",
            )
        out[key] = value
    return out


def _too_deep() -> FileProblem:
    return FileProblem("too-deep", f"nested deeper than {MAX_DEPTH} levels", "submit the file as trainbench wrote it")


def _depth_over(value: Any) -> bool:
    """True when ``value`` nests deeper than MAX_DEPTH (breadth-first, linear in its size)."""
    depth, frontier = 0, [value]
    while frontier:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        nxt: list[Any] = []
        for v in frontier:
            if isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        frontier = nxt
    return False


def parse_json(data: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, bounded numbers, no duplicate keys, at most MAX_DEPTH levels.

    Raises:
        FileProblem: codes ``not-json``, ``non-finite-number``, ``bad-number``, ``duplicate-key``, ``too-deep``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            "not-json", f"not UTF-8 text ({exc.reason} at byte {exc.start})", "submit the file as written"
        ) from exc
    try:
        value = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
            parse_float=_bounded_float,
            object_pairs_hook=_no_duplicate_keys,
        )
    except json.JSONDecodeError as exc:
        raise FileProblem(
            "not-json",
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "submit the file exactly as trainbench wrote it (it may have been truncated or hand-edited)",
        ) from exc
    except RecursionError as exc:
        raise _too_deep() from exc
    except ValueError as exc:  # a number the standard library refuses to convert
        raise _number_problem(f"a number that cannot be read: {exc}") from exc
    if _depth_over(value):
        raise _too_deep()
    return value


def read_json(path: Path) -> Any:
    """:func:`read_bounded` then :func:`parse_json`.

    Raises:
        FileProblem: any of the codes of those two functions.
    """
    return parse_json(read_bounded(path))
