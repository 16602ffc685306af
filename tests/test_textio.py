"""Decoding and encoding source files: every decodable file comes back byte-for-byte."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from est2tpu.ftypes import MigrationError
from est2tpu.textio import decode, detect_newline, encode

ROUND_TRIP_CASES = [
    pytest.param(b"", id="empty"),
    pytest.param(b"import tensorflow as tf\n", id="plain_utf8"),
    pytest.param("x = 'héllo ✓'\n".encode(), id="utf8_non_ascii"),
    pytest.param(codecs.BOM_UTF8 + b"x = 1\n", id="utf8_bom"),
    pytest.param(codecs.BOM_UTF8 + b"# coding: utf-8\nx = 1\n", id="utf8_bom_with_cookie"),
    pytest.param(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n", id="latin1_cookie"),
    pytest.param(
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '\x80'\n",
        id="cp1252_cookie_line2",
    ),
    pytest.param(b"a = 1\r\nb = 2\r\n", id="crlf"),
    pytest.param(b"a = 1\rb = 2\r", id="old_mac_cr"),
    pytest.param(b"a = 1\r\nb = 2\nc = 3\rd = 4", id="mixed_endings_no_final_newline"),
    pytest.param(b"# coding: latin-1\r\nx = '\xff'\r\n", id="latin1_crlf"),
]


@pytest.mark.parametrize("data", ROUND_TRIP_CASES)
def test_round_trip_is_byte_exact(data: bytes) -> None:
    d = decode(data)
    assert encode(d.text, d.encoding, d.bom) == data


def test_bom_is_a_flag_not_part_of_the_text() -> None:
    d = decode(codecs.BOM_UTF8 + b"x = 1\n")
    assert d.bom is True
    assert d.encoding == "utf-8"
    assert d.text == "x = 1\n"


def test_latin1_cookie_decodes_with_that_encoding() -> None:
    d = decode(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    assert d.encoding == "iso-8859-1"
    assert "name = 'é'" in d.text
    assert d.bom is False


def test_text_keeps_crlf_and_newline_reports_it() -> None:
    d = decode(b"a = 1\r\nb = 2\r\n")
    assert d.text == "a = 1\r\nb = 2\r\n"
    assert d.newline == "\r\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", "\n", id="no_endings_default_lf"),
        pytest.param("a\nb\n", "\n", id="lf"),
        pytest.param("a\r\nb\r\n", "\r\n", id="crlf"),
        pytest.param("a\rb\r", "\r", id="cr"),
        pytest.param("a\r\nb\r\nc\n", "\r\n", id="mostly_crlf"),
        pytest.param("a\nb\r\n", "\n", id="tie_goes_to_first"),
        pytest.param("a\r\nb\n", "\r\n", id="tie_goes_to_first_crlf"),
    ],
)
def test_detect_newline(text: str, expected: str) -> None:
    assert detect_newline(text) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"x = 1\n\x00\x01\x02", "binary file", id="nul_bytes"),
        pytest.param(b"x = '\xe9'\n", "cannot decode as utf-8 (line 1", id="latin1_without_cookie"),
        pytest.param(b"x = 1\ny = 2\nz = '\xff'\n", "line 3", id="bad_byte_later_line"),
        pytest.param(b"# coding: klingon\nx = 1\n", "bad coding cookie", id="unknown_cookie"),
        pytest.param(
            codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n",
            "contradicts the UTF-8 BOM",
            id="bom_vs_cookie",
        ),
        pytest.param(
            b"# coding: ascii\nx = '\xe9'\n",
            "cannot decode as ascii",
            id="byte_outside_cookie_encoding",
        ),
    ],
)
def test_undecodable_input_raises_one_line_reason(data: bytes, reason: str) -> None:
    with pytest.raises(MigrationError) as info:
        decode(data)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message


def test_encode_refuses_characters_the_encoding_cannot_store() -> None:
    with pytest.raises(MigrationError, match="cannot encode"):
        encode("x = '✓'\n", "iso-8859-1", False)


def test_encode_adds_bom_when_asked() -> None:
    assert encode("x\n", "utf-8", True) == codecs.BOM_UTF8 + b"x\n"


_line = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\n")
)
_ending = st.sampled_from(["\n", "\r\n", "\r", ""])


@given(st.lists(st.tuples(_line, _ending), max_size=8), st.booleans())
def test_round_trip_property_utf8(lines: list[tuple[str, str]], bom: bool) -> None:
    text = "".join(a + b for a, b in lines)
    # Without a BOM, a text that starts with U+FEFF is byte-for-byte a file with a BOM:
    # decode never produces it (it reads that character as the BOM), so it is no input.
    assume(bom or not text.startswith("\ufeff"))
    data = encode(text, "utf-8", bom)
    d = decode(data)
    assert d.text == text
    assert encode(d.text, d.encoding, d.bom) == data


@given(st.binary(max_size=64))
def test_round_trip_property_latin1_cookie(payload: bytes) -> None:
    data = b"# -*- coding: latin-1 -*-\n" + payload.replace(b"\x00", b" ")
    d = decode(data)
    assert encode(d.text, d.encoding, d.bom) == data


@given(st.binary(max_size=64))
def test_any_bytes_either_round_trip_or_raise_migration_error(data: bytes) -> None:
    try:
        d = decode(data)
    except MigrationError as exc:
        assert "\n" not in str(exc)
    else:
        assert encode(d.text, d.encoding, d.bom) == data


def test_leading_feff_after_the_bom_round_trips() -> None:
    # Two BOMs: the first is the BOM, the second a character of the text; both survive.
    data = codecs.BOM_UTF8 * 2 + b"x = 1\n"
    d = decode(data)
    assert (d.text, d.bom) == ("\ufeffx = 1\n", True)
    assert encode(d.text, d.encoding, d.bom) == data
