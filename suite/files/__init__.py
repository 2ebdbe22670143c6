"""The one bounded reader of every untrusted file: results, system descriptions, bands, specs,
price tables, rules, outbox entries and checksum lists (DESIGN.md, "Untrusted input").

A file is opened only when it is a regular file (never a FIFO, a device, a socket or a
directory, which could block or never end), without following a final link, non-blocking,
with a single link count (a hard link can make a file outside a tree appear inside it), and
never read past :data:`MAX_FILE_BYTES` (:mod:`.bounded`). Nothing read is executed,
evaluated or unpickled. JSON (:mod:`.strict_json`) is the standard library's parser made
strict: NaN and Infinity, numbers that overflow, integers of more than
:data:`MAX_INT_DIGITS` digits, duplicate keys and nesting deeper than :data:`MAX_DEPTH`
are refused. YAML (:mod:`.strict_yaml`) is PyYAML's safe loader made strict: no anchors or
aliases (the "billion laughs" expansion), no merge keys (``<<``), no duplicate keys, the
same depth and integer caps, at most :data:`MAX_YAML_NODES` nodes. Every refusal is a
:class:`FileProblem`, never a traceback; the work is linear in the (capped) size.
"""

from suite.files.bounded import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_FLOAT_CHARS,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    FileProblem,
    link_problem,
    read_bounded,
    read_config_text,
)
from suite.files.strict_json import parse_json, read_json
from suite.files.strict_yaml import MAX_YAML_NODES, parse_yaml, read_yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_FLOAT_CHARS",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "MAX_YAML_NODES",
    "FileProblem",
    "link_problem",
    "parse_json",
    "parse_yaml",
    "read_bounded",
    "read_config_text",
    "read_json",
    "read_yaml",
]
