"""Untrusted strings on their way into Markdown stay text: no markup, HTML, link or table cell survives."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from suite.markdown import escape, link, plain


@given(st.text())
def test_escaped_text_has_no_live_markup(text: str) -> None:
    out = escape(text)
    assert "\n" not in out and "\r" not in out and "<" not in out and ">" not in out
    unescaped = re.sub(r"\\.", "", out)  # what remains outside backslash escapes
    assert not set("[]|`*_~()") & set(unescaped)
    assert not re.search(r"&(?!amp;|lt;|gt;)", unescaped)  # every & starts one of our three entities


def test_known_attacks_become_text() -> None:
    assert escape("[x](javascript:alert(1))") == r"\[x\]\(javascript:alert\(1\)\)"
    assert escape("<img src=x onerror=alert(1)>") == r"&lt;img src=x onerror=alert\(1\)&gt;"
    assert escape("a | b\nc `d`") == r"a \| b c \`d\`"
    # a whole escape sequence goes (no "[31m" residue), other controls become spaces
    assert plain("a\x1b[31mb\u2028c") == "ab c"
    assert escape("a\x1b[31m[b]\x1b[0m") == r"a\[b\]"
    assert plain("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\") == "click"  # an OSC 8 hyperlink


def test_links_only_to_http_and_https() -> None:
    assert link("run", "https://mlflow.example/#/runs/1") == "[run](https://mlflow.example/#/runs/1)"
    assert link("x", "http://h/a b)c") == "[x](http://h/a%20b%29c)"
    for url in ("javascript:alert(1)", "file:///etc/passwd", "data:text/html,<b>", "//host/x", "mlflow:abc"):
        assert link("x", url) == "x"
