"""The streamed-answer filter (:class:`kgrag.llm.streaming.TagStripper`, issue 29 item 8):
whatever way a reply is cut into pieces, the stream is the reply without its markup tags."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kgrag.llm.streaming import TagStripper


def stream(pieces: list[str]) -> str:
    stripper = TagStripper()
    return "".join([stripper.feed(p) for p in pieces] + [stripper.flush()])


def cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


def test_tags_and_the_blanks_around_the_text_are_dropped():
    assert stream(["<answers>\nBob\nAlice\n</answers>"]) == "Bob\nAlice"
    assert stream(["The one about dreams is <answers>Paprika</answers>"]) == \
        "The one about dreams is Paprika"
    assert stream(["<answer/>", "  ", "\n"]) == ""


def test_a_less_than_sign_that_is_not_a_tag_is_text():
    assert stream(["x < y and 2<3, a <b c> d"]) == "x < y and 2<3, a <b c> d"
    assert stream(["<", "3 you"]) == "<3 you"
    assert stream(["unfinished <tag"]) == "unfinished <tag"


@given(st.lists(st.sampled_from(["Bob", "Alice Moreau", "<answers>", "</answers>", "\n", " ",
                                 "x < y", "<3", "<br/>", "a>b"]), max_size=12),
       st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_any_cut_of_a_reply_streams_the_same_text(parts, cuts):
    reply = "".join(parts)
    assert stream(cut(reply, cuts)) == stream([reply])
    assert "<answers>" not in stream(cut(reply, cuts))
