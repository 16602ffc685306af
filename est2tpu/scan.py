"""What is known about a file before it is parsed: the byte pre-filter, the module names
it may be imported as, and the TensorFlow imports a regex can see. No LibCST here."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from functools import lru_cache
from pathlib import PurePath

from est2tpu.ftypes import Target

# Bytes any rule can react to. A file without one of them is never parsed. (Not b"tpu":
# it matches every "output"; the old TPU spellings all say "contrib" or "estimator".)
PREFILTER_TOKENS = (
    b"stimator",
    b"contrib",
    b"RunConfig",
    b"export_savedmodel",
    b"input_fn",
    b"model_fn",
    # a project helper that makes an input function's batches (`.batch(`, `padded_batch(`)
    # in a module of its own: TPU005 threads params["batch_size"] into it
    b"batch(",
)


def may_match(data: bytes, target: Target | None = None) -> bool:
    """The byte pre-filter. On `tf2`, any TensorFlow module passes too: a model_fn may call
    a helper in it whose TF1 layers, losses and metrics must change as well."""
    if any(token in data for token in PREFILTER_TOKENS):
        return True
    return target is Target.TF2 and b"tensorflow" in data


def module_names(path: PurePath, root: PurePath | None) -> list[str]:
    """Every dotted name a file may be imported as: `model`, `trainer.model`, ..."""
    parts = list(path.with_suffix("").parts)
    if root is not None:
        try:
            parts = list(path.with_suffix("").relative_to(root).parts)
        except ValueError:
            pass
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


# Each pattern starts with a literal, which lets `re` skip ahead fast (a leading `\b` or
# look-behind makes it try every position: 20 x slower). What must come before the literal
# is checked by `_matches`.
_FROM_IMPORT = re.compile(r"from\s+([\w.]+)\s+import\s*(\([^)]*\)?|[^\n;]*)")
_PLAIN_IMPORT = re.compile(r"import\s+([^\n;]*)")
_COMMENT = re.compile(r"#[^\n]*")
_WORD = re.compile(r"\w")


def _matches(pattern: re.Pattern[str], text: str, before: str) -> Iterator[re.Match[str]]:
    """`re.finditer` of the pattern with a look-behind: not preceded by a word character
    or one of `before`. Exactly finditer's matches (a candidate that fails the check is
    skipped by one character, not by its length)."""
    pos = 0
    while (match := pattern.search(text, pos)) is not None:
        start = match.start()
        prev = text[start - 1] if start else ""
        if prev and (prev in before or _WORD.match(prev)):
            pos = start + 1
            continue
        yield match
        pos = match.end()


def import_pairs(text: str) -> list[tuple[str, str]] | None:
    """(bound name, imported module) for every TensorFlow import a regex can see.

    A superset of what `ImportTable.from_module` binds to a `tensorflow*` module: it also
    sees imports inside strings and comments, and keeps names bound twice, which only ever
    adds spellings. Relative imports and `*` bind nothing there, nor here. None when a
    parenthesised import list holds a comment or does not close (the scan cannot tell).
    """
    if "tensorflow" not in text:
        return []
    if "\\" in text:
        text = re.sub(r"\\\r?\n", " ", text)
    pairs: list[tuple[str, str]] = []
    for match in _matches(_FROM_IMPORT, text, ""):
        module = match.group(1)
        if not module.startswith("tensorflow"):
            continue
        names = match.group(2)
        if names.startswith("(") and ("#" in names or not names.endswith(")")):
            return None
        names = _COMMENT.sub(" ", names).strip("() \t\r\n")
        for part in names.replace("\n", " ").split(","):
            words = part.split()
            if not words or words[0] == "*":
                continue
            bound = words[2] if len(words) >= 3 and words[1] == "as" else words[0]
            pairs.append((bound, f"{module}.{words[0]}"))
    for match in _matches(_PLAIN_IMPORT, text, "."):
        for part in _COMMENT.sub(" ", match.group(1)).split(","):
            words = part.split()
            if not words or not words[0].startswith("tensorflow"):
                continue
            if len(words) >= 3 and words[1] == "as":
                pairs.append((words[2], words[0]))
            else:
                top = words[0].split(".")[0]
                pairs.append((top, top))
    return pairs


def package_members(text: str, package: str) -> set[str]:
    """The members of `package` a module's text imports by the package's name
    (`from package import a, b as c`, `import package.a`): `{"a", "b"}`. A regex look, as
    `import_pairs`: imports in strings count too, which only adds names."""
    if package not in text:
        return set()
    text = re.sub(r"\\\r?\n", " ", text)
    found: set[str] = set()
    for match in _matches(_FROM_IMPORT, text, ""):
        module = match.group(1)
        if module == package:
            names = _COMMENT.sub(" ", match.group(2)).strip("() \t\r\n")
            found.update(
                words[0] for part in names.split(",") if (words := part.split()) and words[0] != "*"
            )
        elif module.startswith(package + "."):
            found.add(module[len(package) + 1 :].split(".")[0])
    for match in _matches(_PLAIN_IMPORT, text, "."):
        for part in _COMMENT.sub(" ", match.group(1)).split(","):
            words = part.split()
            if words and words[0].startswith(package + "."):
                found.add(words[0][len(package) + 1 :].split(".")[0])
    return found


_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_F_PREFIX = re.compile(r"[rRbBuU]?[fF]|[fF][rR]")


@lru_cache(maxsize=8)
def code_only(text: str) -> str:
    """The text's code without comments and string literals, tokens joined so that a
    dotted name or a call reads as in the usual spelling (`tf.estimator.Estimator(`).

    Names a file merely mentions in a docstring (TensorFlow's own sources mention
    `tf.estimator.Estimator` in hundreds of them) are not uses. f-strings are kept (the
    names in their fields are code). Text the tokenizer cannot read is returned as it is,
    so a test on the result never misses a use the text shows.
    """
    out: list[str] = []
    last_word = False
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _DROPPED:
                continue
            if tok.type == tokenize.STRING and not _F_PREFIX.match(tok.string):
                out.append(" ")
                last_word = False
                continue
            word = tok.type in (tokenize.NAME, tokenize.NUMBER)
            if word and last_word:
                out.append(" ")
            out.append(tok.string)
            last_word = word
    except (tokenize.TokenError, SyntaxError):
        return text
    return "".join(out)
