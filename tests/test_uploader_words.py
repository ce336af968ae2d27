"""Streamlit's own uploader words in Spanish (ui/i18n_ui.file_uploader): the style that swaps them is scoped to the
widget, and a catalog text cannot break out of it. The words as drawn are checked in a real browser by
tests/test_browser_screens.py (the Spanish Runs page)."""

from __future__ import annotations

import re

from ui.i18n_ui import _css_string, _uploader_style


def test_the_style_is_scoped_to_the_widget_as_streamlit_names_its_class():
    css = _uploader_style("act_result_file", button="Subir archivo", limit="64 MB por archivo • JSON")
    selectors = [rule.split("{")[0] for rule in css.removeprefix("<style>").split("}") if "{" in rule]
    assert len(selectors) == 3
    assert all(part.strip().startswith(".st-key-act_result_file ") for s in selectors for part in s.split(","))
    assert 'content: "Subir archivo";' in css and 'content: "64 MB por archivo • JSON";' in css
    # Streamlit's st-key class: every character outside [a-zA-Z0-9_-] becomes "-"
    assert ".st-key-my-key-1 " in _uploader_style(" my key.1 ", button="b", limit="l")


def test_a_catalog_text_cannot_leave_its_css_string_or_the_style_element():
    # CSS ends a string at a line feed, carriage return or form feed: each would let the rest become rules
    text = 'a "quoted" \\ back\nslash\rcr\fff} #x{display:none} </style><script>alert(1)</script>'
    literal = _css_string(text)
    assert literal.startswith('"') and literal.endswith('"')
    inner = literal[1:-1]
    assert not re.search(r'["<>\n\r\f]', inner) and "\\\\" not in inner.replace("\\5c ", "")
    assert _css_string("64 MB • JSON, ñandú") == '"64 MB • JSON, ñandú"'  # printable text stays as it is
    css = _uploader_style("upload", button=text, limit=text)
    assert css.startswith("<style>") and css.endswith("</style>")
    assert css.count("<") == 2, css  # only the style element's own tags: no "</style>" or "<script>" from the text
