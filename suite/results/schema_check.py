"""A result document against the JSON Schema of its version, in time linear in its records.

A general JSON Schema validator spends about 0.3 ms per step record, so a 10,000-step
result would take 3 s. The record arrays (``steps``, ``windows``, ``utilization``) have
item schemas that constrain only the JSON types of fields and a few values, so whether an
item is valid depends only on its *shape*: its keys, each value's JSON type (the element
types of a list of scalars) and the values of constrained fields (strings, and fields with
bounds). Each distinct shape is validated once by the full validator, and its errors apply
to every item of that shape; the rest of the document is validated as usual. The outcome
is exactly the full validator's, in O(n) with a small constant (a real result has a few
shapes per array).
"""

from __future__ import annotations

import copy
import functools
from collections import deque
from collections.abc import Iterator
from typing import Any

import jsonschema

from suite.results.migrations import schema_validator

RECORD_ARRAYS = ("steps", "windows", "utilization")
"""Top-level arrays whose items are validated by shape."""
_TYPE_ONLY = frozenset({"title", "type", "default", "description", "anyOf", "items"})
"""Keywords of a field schema that constrain only JSON types (for the item schemas used here)."""


def _json_type(value: Any) -> str:
    if value is None or isinstance(value, bool | str | dict):
        return type(value).__name__
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "list"


def _root(version: int) -> dict[str, Any]:
    schema = schema_validator(version).schema
    assert isinstance(schema, dict)
    return schema


@functools.lru_cache(maxsize=8)
def _item_plan(version: int, key: str) -> tuple[jsonschema.Draft202012Validator, frozenset[str]] | None:
    """(validator of one item, fields whose values matter beyond their type), or None when the array
    has no simple item schema (then the whole array goes through the full validator)."""
    root = _root(version)
    items = root.get("properties", {}).get(key, {}).get("items")
    ref = items.get("$ref", "") if isinstance(items, dict) else ""
    if not ref.startswith("#/$defs/"):
        return None
    item = root["$defs"][ref.removeprefix("#/$defs/")]
    valued = frozenset(
        name for name, sub in item.get("properties", {}).items() if not set(sub) <= _TYPE_ONLY or "$ref" in sub
    )
    return jsonschema.Draft202012Validator({**item, "$defs": root["$defs"]}), valued


def _shape(item: Any, valued: frozenset[str]) -> Any:
    if not isinstance(item, dict):
        return None
    out = []
    for k, v in item.items():
        if isinstance(v, list):
            if any(isinstance(x, list | dict) for x in v):
                return None  # nested: no cheap shape
            kind: Any = ("list", frozenset(_json_type(x) for x in v))
        elif isinstance(v, dict):
            return None
        else:
            kind = _json_type(v)
        value = tuple(v) if isinstance(v, list) else v  # hashable: the items are scalars here
        out.append((k, kind, value if (isinstance(v, str) or k in valued) else None))
    return tuple(sorted(out, key=lambda x: x[0]))


def _array_errors(doc: dict[str, Any], key: str, version: int) -> Iterator[jsonschema.ValidationError]:
    plan = _item_plan(version, key)
    items = doc[key]
    assert plan is not None
    validator, valued = plan
    root = _root(version)
    limit = root["properties"][key].get("maxItems")
    if limit is not None and len(items) > limit:
        yield jsonschema.ValidationError(f"{len(items)} items is more than the {limit} allowed", path=[key])
        return
    cache: dict[Any, list[jsonschema.ValidationError]] = {}
    for i, item in enumerate(items):
        shape = _shape(item, valued)
        if shape is None:
            found = list(validator.iter_errors(item))
        else:
            if shape not in cache:
                cache[shape] = list(validator.iter_errors(item))
            found = cache[shape]
        for err in found:
            moved = copy.copy(err)
            moved.path = moved.relative_path = deque([key, i, *err.relative_path])
            yield moved


def schema_errors(doc: Any, version: int) -> Iterator[jsonschema.ValidationError]:
    """Every JSON Schema error of ``doc`` against result schema ``version``, lazily (stop when you have enough).

    Raises:
        KeyError: ``version`` has no committed schema.
    """
    validator = schema_validator(version)
    if not isinstance(doc, dict):
        yield from validator.iter_errors(doc)
        return
    split = [k for k in RECORD_ARRAYS if isinstance(doc.get(k), list) and _item_plan(version, k) is not None]
    yield from validator.iter_errors({**doc, **{k: [] for k in split}})
    for key in split:
        yield from _array_errors(doc, key, version)
