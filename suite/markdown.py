"""Untrusted strings on their way into Markdown: one escaper and one link builder.

Result files, system names and config values may be hostile (DESIGN.md, "Untrusted
input"). Before they reach a Markdown document (a comparison report, the MLflow run
description, which the MLflow UI renders as Markdown) they lose their control
characters and every character that could open a table cell, a link, an image, code
or an HTML tag is escaped (CommonMark 0.31, "Backslash escapes" and "Entity
references").
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from suite.console import plain

__all__ = ["escape", "link", "plain"]

_BACKSLASHED = re.compile(r"([\\`*_\[\]|~#!{}()])")


def escape(text: object) -> str:
    """``text`` as literal Markdown text: one line, no markup, no HTML, no link.

    ``& < >`` become entities (so no HTML tag or entity survives); backslash,
    backtick, ``* _ [ ] | ~ # ! { } ( )`` are backslash-escaped (no emphasis, code,
    link, image or table cell can start from them).
    """
    s = plain(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BACKSLASHED.sub(r"\\\1", s)


def link(text: object, url: str) -> str:
    """A Markdown link to ``url`` when it is http(s), else the escaped text alone.

    The URL is percent-encoded where it could end the link early (spaces,
    parentheses, angle brackets, quotes) or carry control characters.
    """
    label = escape(text)
    try:
        parts = urlsplit(url)
    except ValueError:
        return label
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return label
    safe = quote(plain(url).strip(), safe="/:?=&#%+,;@!$*-._~")
    return f"[{label}]({safe})"
