"""Strict YAML for untrusted files: PyYAML's safe loader without anchors, aliases, merge keys or
duplicate keys, with bounded depth, node count and integers (see :mod:`suite.files`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from suite.files.bounded import MAX_DEPTH, MAX_INT_DIGITS, FileProblem, read_config_text
from suite.files.strict_json import _number_problem, _too_deep

MAX_YAML_NODES = 1_000_000
"""Most YAML nodes (scalars, sequences, mappings) in one file."""

_LONG_INT = re.compile(
    rf"[-+]?(?:0[xX][0-9a-fA-F_]{{{MAX_INT_DIGITS},}}|0[oObB][0-7_]{{{MAX_INT_DIGITS},}}|[0-9][0-9_:]{{{MAX_INT_DIGITS},}})"
)
"""A plain scalar YAML would read as an integer of more than MAX_INT_DIGITS digits."""

_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """PyYAML's safe loader (libyaml where available) without merge keys or duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise _yaml_problem("a merge key (<<)", key_node)
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError as exc:
                raise _yaml_problem("a key that is not a plain value", key_node) from exc
            if duplicate:
                raise FileProblem(
                    "duplicate-key",
                    f"the key {key!r} appears twice in one mapping (line {_line(key_node)})",
                    "remove the repeated key; YAML readers disagree on which value wins",
                )
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]


def _line(node: Any) -> int:
    mark = getattr(node, "start_mark", None)
    return int(mark.line) + 1 if mark is not None else 0


def _yaml_problem(what: str, node: Any) -> FileProblem:
    return FileProblem(
        "yaml-feature",
        f"{what} at line {_line(node)}: anchors, aliases and merge keys are not accepted",
        "write every value out in full (no &anchor, *alias or <<)",
    )


def _check_events(text: str) -> None:
    """One pass over the YAML event stream: no anchors or aliases, bounded depth, nodes and integers."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise _yaml_problem("an alias", event)
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if event.anchor is not None:
                raise _yaml_problem("an anchor", event)
            if nodes > MAX_YAML_NODES:
                raise FileProblem("too-large", f"more than {MAX_YAML_NODES:,} YAML nodes", "keep the file small")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _too_deep()
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and not event.style and _LONG_INT.fullmatch(event.value):
            raise _number_problem(f"a number of {len(event.value)} digits at line {_line(event)}")


def parse_yaml(text: str) -> Any:
    """Strict YAML (one document): no anchors, aliases, merge keys or duplicate keys; bounded depth and numbers.

    Raises:
        FileProblem: codes ``not-yaml``, ``yaml-feature``, ``duplicate-key``, ``too-deep``,
            ``too-large``, ``bad-number``.
    """
    try:
        _check_events(text)
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit (PyYAML >= 6.0.4) can stop the scan first
            raise _too_deep() from exc
        raise FileProblem("not-yaml", f"not valid YAML: {exc}", "fix the YAML syntax") from exc
    except (ValueError, RecursionError) as exc:
        raise _number_problem(f"a value that cannot be read: {exc}") from exc


def read_yaml(path: Path) -> Any:
    """:func:`read_config_text` then :func:`parse_yaml`.

    Raises:
        FileProblem: any of the codes of those two functions.
    """
    return parse_yaml(read_config_text(path))
