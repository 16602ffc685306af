"""Bytes <-> text for source files, so that a rewritten file is stored exactly as it was found."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass

from est2tpu.ftypes import MigrationError

__all__ = ["Decoded", "check_wide", "decode", "detect_newline", "encode"]

_BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class Decoded:
    """A decoded source file and what is needed to encode it back byte-for-byte.

    ``text`` keeps the file's own line endings (LibCST preserves them); ``newline`` is the
    dominant one, for code that has to insert new lines.
    """

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"


def detect_newline(text: str) -> str:
    """Return the dominant line ending of ``text`` ("\\n", "\\r\\n" or "\\r"); "\\n" if none.

    Ties go to the ending that appears first, so a file's first line decides a 50/50 split.
    """
    if "\r" not in text:
        return "\n"
    crlf = text.count("\r\n")
    counts = {"\r\n": crlf, "\r": text.count("\r") - crlf, "\n": text.count("\n") - crlf}
    first_seen: dict[str, int] = {}
    for ending, pattern in _LONE.items():
        if counts[ending]:
            match = pattern.search(text)
            assert match is not None
            first_seen[ending] = match.start()
    if not first_seen:
        return "\n"
    return max(first_seen, key=lambda e: (counts[e], -first_seen[e]))


# Each line ending on its own: "\r" not followed by "\n", "\n" not preceded by "\r".
_LONE = {
    "\r\n": re.compile("\r\n"),
    "\r": re.compile("\r(?!\n)"),
    "\n": re.compile("(?<!\r)\n"),
}


# Longest first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32-LE"),
    (codecs.BOM_UTF32_BE, "UTF-32-BE"),
    (codecs.BOM_UTF16_LE, "UTF-16-LE"),
    (codecs.BOM_UTF16_BE, "UTF-16-BE"),
)


def check_wide(data: bytes) -> None:
    """Raise MigrationError when ``data`` is UTF-16 or UTF-32 text.

    Python cannot run such a source file, and its bytes match no pre-filter token, so
    without this check the file would pass as "skipped" rather than as undecodable.
    """
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise MigrationError(
                f"cannot decode: {name} text (it starts with a {name} byte order mark); "
                "Python reads source files as UTF-8: convert the file to UTF-8"
            )
    # Without a BOM, ASCII text in UTF-16 has a NUL in every other byte.
    head = data[:64]
    if len(head) >= 4 and b"\x00" in head:
        odd, even = head[1::2], head[0::2]
        wide: str | None = None
        if odd.count(0) == len(odd) and 0 not in even:
            wide = "UTF-16-LE"
        elif even.count(0) == len(even) and 0 not in odd:
            wide = "UTF-16-BE"
        if wide is not None:
            raise MigrationError(
                f"cannot decode: {wide} text (a NUL byte in every other byte); "
                "Python reads source files as UTF-8: convert the file to UTF-8"
            )


def decode(data: bytes) -> Decoded:
    """Decode a Python source file as Python itself would.

    A UTF-8 BOM and a PEP 263 coding cookie are honoured; otherwise the file is UTF-8.
    Raises :class:`MigrationError` with a one-line reason for binary files (NUL bytes),
    a bad or unknown cookie, bytes that are not valid in the file's encoding, or an
    encoding that would not give back the same bytes (so that writing never corrupts).
    """
    check_wide(data)
    if b"\x00" in data:
        raise MigrationError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # detect_encoding reports an unknown cookie, a cookie that contradicts the BOM,
        # and undecodable first lines all as SyntaxError; the last is a plain decode error,
        # and decoding below says where.
        if data.startswith(_BOM) and "encoding problem" in str(exc):
            raise MigrationError("coding cookie contradicts the UTF-8 BOM") from None
        if "invalid or missing encoding declaration" not in str(exc):
            raise MigrationError(f"bad coding cookie: {_one_line(exc)}") from None
        encoding = "utf-8"
    bom = data.startswith(_BOM)
    if bom:
        # "utf-8-sig" is how detect_encoding says "BOM"; we keep the BOM as a flag instead.
        encoding = "utf-8"
        body = data[len(_BOM) :]
    else:
        body = data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise MigrationError(
            f"cannot decode as {encoding} (line {line}, byte {body[exc.start]:#04x}); "
            "add a coding cookie or convert the file to UTF-8"
        ) from None
    except LookupError as exc:  # pragma: no cover - detect_encoding already checks names
        raise MigrationError(f"unknown encoding: {_one_line(exc)}") from None
    # Some codecs (stateful or with several spellings of one character) do not round-trip;
    # refusing such a file up front is what guarantees encode(decode(b)) == b.
    # Strict UTF-8 decoding accepts only the one encoding of each character (no overlong
    # forms, no surrogates), so UTF-8 text always encodes back to its bytes: a warm run
    # over TensorFlow's tree spent a tenth of its time re-encoding to see that.
    if encoding == "utf-8":
        return Decoded(text=text, encoding=encoding, bom=bom, newline=detect_newline(text))
    try:
        if text.encode(encoding) != body:
            raise MigrationError(f"encoding {encoding} does not round-trip this file")
    except UnicodeEncodeError:
        raise MigrationError(f"encoding {encoding} does not round-trip this file") from None
    return Decoded(text=text, encoding=encoding, bom=bom, newline=detect_newline(text))


def encode(text: str, encoding: str = "utf-8", bom: bool = False) -> bytes:
    """Encode ``text`` for writing back to a file decoded with ``encoding``/``bom``.

    Raises :class:`MigrationError` if the text holds a character the file's encoding
    cannot store (a rewrite must never be written lossily).
    """
    try:
        body = text.encode(encoding)
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise MigrationError(
            f"the new text contains {bad!r}, which {encoding} cannot encode"
        ) from None
    except LookupError as exc:
        raise MigrationError(f"unknown encoding: {_one_line(exc)}") from None
    return _BOM + body if bom else body


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
