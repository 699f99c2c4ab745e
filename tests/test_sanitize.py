"""The one sanitizer of what optests shows: whatever text a file holds, the terminal gets no
control character, the page no markup, the shell exactly the word meant."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

from hypothesis import given
from hypothesis import strategies as st

from optests._sanitize import html, printable, script_json, shell_join, shell_word

#: Every character a terminal acts on or that reorders what it shows.
_DRIVES = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_TEXT = st.text(st.characters(codec="utf-8"))


@given(_TEXT)
def test_printable_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = printable(text)
    assert not _DRIVES.search(shown)
    assert shown == text or "\\x" in shown or "\\u" in shown


def test_printable_shows_each_control_as_an_escape() -> None:
    assert printable("a\x1b]0;t\x07b\u202ec\x9b\nd") == "a\\x1b]0;t\\x07b\\u202ec\\x9b\\x0ad"


@given(_TEXT)
def test_html_text_is_never_markup(text: str) -> None:
    assert not set("<>\"'") & set(html(text))
    assert (
        html(text).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&")
        == text
    )


@given(st.dictionaries(_TEXT, _TEXT))
def test_script_json_cannot_close_its_element(data: dict[str, str]) -> None:
    text = script_json(data)
    assert "<" not in text and json.loads(text) == data


@given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12), max_size=4))
def test_a_shell_reads_back_the_words_meant(words: list[str]) -> None:
    for command in (" ".join(map(shell_word, words)), shell_join(words)):
        assert shlex.split(command) == words


def test_bash_reads_back_a_crafted_name() -> None:
    name = "it's'; touch pwned; echo '$(id)`id`"
    out = subprocess.run(["bash", "-c", f"printf '%s\\n' {shell_word(name)}"], capture_output=True, text=True, check=True)
    assert out.stdout == name + "\n"
