"""Find the files to migrate: walk directories, honour .gitignore and excludes, stay in the tree."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_EXCLUDED_DIRS",
    "IgnorePattern",
    "discover",
    "is_ignored",
    "parse_ignore_lines",
    "wildmatch",
]

SUFFIXES = (".py", ".ipynb")

#: Directory names never walked into (they hold other people's code or build output).
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "site-packages",
        "build",
        "dist",
        "node_modules",
        "__pycache__",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        # Jupyter's autosave copies: migrating them would duplicate every notebook.
        ".ipynb_checkpoints",
    }
)


@dataclass(frozen=True)
class IgnorePattern:
    """One gitignore line, matched against paths relative to ``base`` as git matches it."""

    base: Path
    glob: str  # without "!", the trailing "/" and a leading "/"
    negate: bool
    dir_only: bool
    anchored: bool  # a slash before the end: matched against the whole relative path
    prefix: str = field(init=False, repr=False, compare=False)  # str(base) + separator
    literal: str | None = field(init=False, repr=False, compare=False)  # no wildcard: the text

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", os.path.join(str(self.base), ""))
        object.__setattr__(self, "literal", _literal(self.glob))

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether the posix path ``rel`` (relative to ``base``) matches this line."""
        if self.dir_only and not is_dir:
            return False
        subject = rel if self.anchored else rel.rsplit("/", 1)[-1]
        if self.literal is not None:
            return subject == self.literal
        return wildmatch(self.glob, subject)


def _literal(glob: str) -> str | None:
    """The text a glob without wildcards matches (backslash escapes removed), or None."""
    if not any(c in glob for c in "*?[\\"):
        return glob
    if any(c in glob for c in "*?["):
        return None
    out, i = [], 0
    while i < len(glob):
        if glob[i] == "\\":
            i += 1
            if i == len(glob):
                return None  # a trailing backslash never matches (git: the same)
        out.append(glob[i])
        i += 1
    return "".join(out)


# git's wildmatch (wildmatch.c) with WM_PATHNAME, result for result; the two abort results
# stop the retries of an outer "*" once they cannot succeed, which keeps patterns like
# "*a*a*a*a*a*a*b" linear where a regex backtracks for minutes.
_MATCH, _NOMATCH, _ABORT_ALL, _ABORT_TO_STARSTAR = 0, 1, -1, -2
_GLOB_SPECIAL = frozenset("*?[\\")
_CLASSES: dict[str, Callable[[str], bool]] = {
    "alnum": lambda c: c.isascii() and c.isalnum(),
    "alpha": lambda c: c.isascii() and c.isalpha(),
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "digit": lambda c: "0" <= c <= "9",
    "graph": lambda c: 33 <= ord(c) <= 126,
    "lower": lambda c: "a" <= c <= "z",
    "print": lambda c: 32 <= ord(c) <= 126,
    "punct": lambda c: 33 <= ord(c) <= 126 and not c.isalnum(),
    "space": lambda c: c in " \t\n\r\f\v",
    "upper": lambda c: "A" <= c <= "Z",
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


def wildmatch(pattern: str, text: str) -> bool:
    """Whether ``text`` matches the git glob ``pattern`` ("*" and "?" never match "/")."""
    return _dowild(pattern, 0, text, 0) == _MATCH


def _dowild(p: str, pi: int, t: str, ti: int) -> int:
    np, nt = len(p), len(t)
    while pi < np:
        pc = p[pi]
        if ti >= nt and pc != "*":
            return _ABORT_ALL
        tc = t[ti] if ti < nt else ""
        if pc == "\\":
            pi += 1
            if pi >= np or tc != p[pi]:
                return _NOMATCH
        elif pc == "?":
            if tc == "/":
                return _NOMATCH
        elif pc == "*":
            pi += 1
            match_slash = False
            if pi < np and p[pi] == "*":
                prev = pi - 2
                while pi < np and p[pi] == "*":
                    pi += 1
                if (prev < 0 or p[prev] == "/") and (
                    pi == np or p[pi] == "/" or p.startswith("\\/", pi)
                ):
                    # "**/" may match no directory at all: try the rest right here.
                    if pi < np and p[pi] == "/" and _dowild(p, pi + 1, t, ti) == _MATCH:
                        return _MATCH
                    match_slash = True
            if pi == np:
                # A trailing "**" matches everything; a trailing "*" up to the next "/".
                if not match_slash and "/" in t[ti:]:
                    return _NOMATCH
                return _MATCH
            if not match_slash and p[pi] == "/":
                # One "*" then "/": the rest of this directory name.
                slash = t.find("/", ti)
                if slash < 0:
                    return _NOMATCH
                ti = slash + 1
                pi += 1
                continue
            while True:
                if ti >= nt:
                    break
                if p[pi] not in _GLOB_SPECIAL:
                    # A literal follows: skip to where it occurs (not past "/" for "*").
                    lit = p[pi]
                    while ti < nt and (match_slash or t[ti] != "/") and t[ti] != lit:
                        ti += 1
                    if ti >= nt or t[ti] != lit:
                        return _ABORT_ALL if match_slash else _ABORT_TO_STARSTAR
                matched = _dowild(p, pi, t, ti)
                if matched != _NOMATCH:
                    if not match_slash or matched != _ABORT_TO_STARSTAR:
                        return matched
                elif not match_slash and t[ti] == "/":
                    return _ABORT_TO_STARSTAR
                ti += 1
            return _ABORT_ALL
        elif pc == "[":
            result = _bracket(p, pi, tc)
            if result is None:
                return _ABORT_ALL
            matched_class, pi = result
            if not matched_class or tc == "/":
                return _NOMATCH
        elif tc != pc:
            return _NOMATCH
        pi += 1
        ti += 1
    return _MATCH if ti >= nt else _NOMATCH


def _bracket(p: str, pi: int, tc: str) -> tuple[bool, int] | None:
    """Match ``tc`` against the bracket expression at ``p[pi]`` ("["): (matched, index of
    its "]"), or None for a malformed expression (git then aborts the whole match)."""
    np = len(p)

    def at(i: int) -> str:
        return p[i] if i < np else ""

    pi += 1
    pc = at(pi)
    negated = pc in ("!", "^")
    if negated:
        pi += 1
        pc = at(pi)
    prev = ""
    matched = False
    while True:
        if not pc:
            return None
        if pc == "\\":
            pi += 1
            pc = at(pi)
            if not pc:
                return None
            if tc == pc:
                matched = True
        elif pc == "-" and prev and at(pi + 1) and at(pi + 1) != "]":
            pi += 1
            pc = at(pi)
            if pc == "\\":
                pi += 1
                pc = at(pi)
                if not pc:
                    return None
            if prev <= tc <= pc:
                matched = True
            pc = ""  # a range is not the start of another range
        elif pc == "[" and at(pi + 1) == ":":
            start = pi + 2
            end = start
            while at(end) and at(end) != "]":
                end += 1
            if not at(end):
                return None
            if end - start - 1 < 0 or p[end - 1] != ":":
                # No ":]": a plain "[" in the set.
                pi = start - 2
                pc = "["
                if tc == pc:
                    matched = True
            else:
                check = _CLASSES.get(p[start : end - 1])
                if check is None:
                    return None  # a malformed [:class:]
                if tc and check(tc):
                    matched = True
                pi = end
                pc = ""
        elif tc == pc:
            matched = True
        prev = pc
        pi += 1
        pc = at(pi)
        if pc == "]":
            break
    return matched != negated, pi


def _compile_line(line: str, base: Path) -> IgnorePattern | None:
    line = line.rstrip("\n").rstrip("\r")
    # Trailing spaces are ignored unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    # A slash anywhere but at the end anchors the pattern to the .gitignore's directory.
    anchored = "/" in line
    line = line.lstrip("/")
    return IgnorePattern(base=base, glob=line, negate=negate, dir_only=dir_only, anchored=anchored)


def parse_ignore_lines(lines: Iterable[str], base: Path) -> list[IgnorePattern]:
    """Compile gitignore-syntax ``lines`` whose paths are relative to ``base``."""
    return [p for p in (_compile_line(line, base) for line in lines) if p is not None]


def _read_ignore_file(path: Path, base: Path) -> list[IgnorePattern]:
    """A .gitignore's patterns, read as git reads it: bytes, a UTF-8 BOM skipped, lines split
    at "\n" only. Its bytes are decoded as file names are (`os.fsdecode`), so a name that
    is not UTF-8, listed literally, matches that very file."""
    try:
        data = path.read_bytes()
    except OSError:
        return []  # an unreadable .gitignore is not worth failing the run for
    data = data.removeprefix(codecs.BOM_UTF8)
    return parse_ignore_lines(os.fsdecode(data).split("\n"), base)


def is_ignored(path: Path | str, patterns: Sequence[IgnorePattern]) -> bool:
    """Whether git would ignore the file ``path`` under ``patterns`` (one .gitignore's lines,
    or several, outermost first): it or a directory above it matches, the last matching
    line deciding; a file below an ignored directory stays ignored whatever `!` says."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        if _is_ignored(os.sep.join(parts[:i]), i < len(parts), patterns):
            return True
    return False


def _is_ignored(path: Path | str, is_dir: bool, patterns: Sequence[IgnorePattern]) -> bool:
    """Last matching pattern wins; patterns are ordered outermost file first.

    ``path`` is absolute and normalised (the walk builds it by joining names).
    """
    if not patterns:
        return False
    return _PatternIndex.of(patterns).ignores(str(path), is_dir)


class _PatternIndex:
    """The lines of a list of patterns that can match a path, found by dictionary look-ups.

    Asking every line of a 50,000-line .gitignore about every file took minutes; git itself
    takes a fraction of a second. A line whose glob starts with literal text can only match
    a path (or, unanchored, a file name) that starts with that text, and one without a
    wildcard (`build/`) only that very name; one of the form `*.ext` only a name ending in
    `.ext`; only lines starting with a wildcard are asked every time. Candidates come last
    line first, so the first match decides.
    """

    _cache: dict[int, tuple[Sequence[IgnorePattern], _PatternIndex]] = {}  # noqa: RUF012

    @classmethod
    def of(cls, patterns: Sequence[IgnorePattern]) -> _PatternIndex:
        # Keyed by identity: the walk hands the same list to every directory below one
        # .gitignore; the list is kept with its index so that its id cannot be reused.
        found = cls._cache.get(id(patterns))
        if found is None or found[0] is not patterns:
            if len(cls._cache) > 4096:
                cls._cache.clear()
            found = (patterns, cls(patterns))
            cls._cache[id(patterns)] = found
        return found[1]

    def __init__(self, patterns: Sequence[IgnorePattern]) -> None:
        self.patterns = patterns
        self.by_path: dict[str, list[int]] = {}  # anchored: prefix + literal start
        self.by_name: dict[str, list[int]] = {}  # unanchored: literal start of the name
        self.by_exact: dict[str, list[int]] = {}  # unanchored, no wildcard: the name
        self.by_suffix: dict[str, list[int]] = {}  # unanchored "*" + literal
        self.always: list[int] = []
        for i, pat in enumerate(patterns):
            head = _literal_head(pat.glob)
            if pat.literal is not None:
                head = pat.literal
            if not pat.anchored and pat.glob.startswith("*") and _literal(pat.glob[1:]):
                self.by_suffix.setdefault(pat.glob[1:], []).append(i)
            elif not head:
                self.always.append(i)
            elif pat.anchored:
                self.by_path.setdefault(pat.prefix + head, []).append(i)
            elif pat.literal is not None:
                self.by_exact.setdefault(pat.literal, []).append(i)
            else:
                self.by_name.setdefault(head, []).append(i)
        self.path_lengths = sorted({len(k) for k in self.by_path})
        self._names: dict[str, tuple[int, ...]] = {}  # file name -> `_name_candidates`
        self.name_lengths = sorted({len(k) for k in self.by_name})
        self.suffix_lengths = sorted({len(k) for k in self.by_suffix})

    def ignores(self, path: str, is_dir: bool) -> bool:
        """`_is_ignored(path, is_dir, patterns)` of this index's patterns."""
        for i in self.candidates(path):
            pat = self.patterns[i]
            if not path.startswith(pat.prefix):
                continue
            rel = path[len(pat.prefix) :]
            if os.sep != "/":  # pragma: no cover - not POSIX
                rel = rel.replace(os.sep, "/")
            if pat.matches(rel, is_dir):
                return not pat.negate
        return False

    def candidates(self, path: str) -> Sequence[int]:
        """Indices of the lines that may match ``path``, last line first."""
        name = path[path.rfind(os.sep) + 1 :]
        found = self._names.get(name)
        if found is None:
            found = self._name_candidates(name)
            if len(self._names) >= _NAME_MEMO:
                self._names.clear()
            self._names[name] = found
        if not self.path_lengths:
            return found
        extra = [i for n in self.path_lengths for i in self.by_path.get(path[:n], ())]
        if not extra:
            return found
        return sorted([*found, *extra], reverse=True)

    def _name_candidates(self, name: str) -> tuple[int, ...]:
        """The lines that may match a path whatever its directory: those asked every time,
        and the unanchored ones whose literal start or `*` suffix fits ``name``."""
        found = [*self.always, *self.by_exact.get(name, ())]
        for n in self.name_lengths:
            found += self.by_name.get(name[:n], ())
        for n in self.suffix_lengths:
            if n <= len(name):
                found += self.by_suffix.get(name[len(name) - n :], ())
        found.sort(reverse=True)
        return tuple(found)


#: How many file names one pattern index remembers the candidate lines of (a tree's names
#: repeat: every package has an `__init__.py`).
_NAME_MEMO = 65536


def _literal_head(glob: str) -> str:
    """The literal text a glob starts with (up to its first wildcard or escape)."""
    for i, c in enumerate(glob):
        if c in _GLOB_SPECIAL:
            return glob[:i]
    return glob


def _find_git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _inherited_patterns(root: Path) -> list[IgnorePattern]:
    """Patterns from .gitignore files in ``root``'s parents, up to the git root."""
    git_root = _find_git_root(root)
    if git_root is None:
        return []
    chain = [root, *root.parents]
    chain = chain[: chain.index(git_root) + 1]
    patterns = _read_ignore_file(git_root / ".git" / "info" / "exclude", git_root)
    for d in reversed(chain[1:]):  # outermost first; root's own file is read by the walk
        patterns += _read_ignore_file(d / ".gitignore", d)
    return patterns


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _not_regular(path: Path | str) -> str | None:
    """Why ``path`` (followed through symlinks) is not a file we can read, or None.

    Reading a FIFO blocks until someone writes to it, and a device can be endless: only
    regular files are ever opened.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"not a regular file ({kind})"


#: The entries of a directory that decide how the rest of it is walked.
_DECIDING = frozenset({".gitignore", "pyvenv.cfg"})


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _is_file(name: str, entries: dict[str, os.DirEntry[str]]) -> bool:
    """`os.path.isfile` of a directory's entry `name`, from its `scandir` entries."""
    entry = entries.get(name)
    if entry is None:
        return False
    try:
        return entry.is_file()
    except OSError:
        return False


@dataclass
class _Walk:
    """State of one walk under one root given on the command line.

    The walk works on absolute (not resolved) path strings so that .gitignore files above
    the current directory apply; results are yielded in the user's own spelling. It never
    enters a symlinked directory, so a regular file's real path is the real root joined
    with its path below the root (no `realpath` per file).
    """

    given: Path  # as the user spelled it
    root: str  # absolute, symlinks not resolved
    real_root: str
    excludes: list[IgnorePattern]
    cwd_excludes: list[IgnorePattern]
    based: list[IgnorePattern]  # each matched from its own base (a config file's directory)
    # (`_order` of the path below the root; what to yield; real path)
    found: list[tuple[str, Path | tuple[Path, str], str | None]]
    links: list[tuple[str, Path, str]]  # symlinked files inside the tree: target
    # Every directory walked (absolute, not resolved) and the ignore patterns that apply in it.
    walked: dict[str, list[IgnorePattern]] = field(default_factory=dict)

    def spelled(self, rel: str) -> Path:
        return self.given / rel if rel else self.given

    def excluded(self, path: str, is_dir: bool) -> bool:
        return bool(self.excludes or self.cwd_excludes or self.based) and (
            _is_ignored(path, is_dir, self.excludes)
            or _is_ignored(path, is_dir, self.cwd_excludes)
            or _is_ignored(path, is_dir, self.based)
        )

    def add(self, rel: str, item: Path | tuple[Path, str], real: str | None) -> None:
        self.found.append((_order(rel), item, real))

    def walk(self, directory: str, rel_dir: str, patterns: list[IgnorePattern]) -> None:
        # A stack, not recursion: a tree 1,000 directories deep is walked like any other.
        stack = [(directory, rel_dir, patterns)]
        while stack:
            stack.extend(reversed(self._walk_one(*stack.pop())))

    def _walk_one(
        self, directory: str, rel_dir: str, patterns: list[IgnorePattern]
    ) -> list[tuple[str, str, list[IgnorePattern]]]:
        """Walk one directory's entries; return its subdirectories to walk. A subdirectory
        that is a virtual environment (it holds a `pyvenv.cfg`) is not walked. Its own
        `.gitignore` and `pyvenv.cfg` are looked for among its entries: no `stat` per
        directory (a big tree has thousands without Python)."""
        subdirs: list[tuple[str, str, list[IgnorePattern]]] = []
        try:
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError as exc:
            if rel_dir and _is_venv(directory):
                return subdirs
            own = os.path.join(directory, ".gitignore")
            if os.path.isfile(own):
                patterns = patterns + _read_ignore_file(Path(own), Path(directory))
            self.walked[directory] = patterns
            reason = f"cannot read directory: {exc.strerror or exc}"
            self.add(rel_dir, (self.spelled(rel_dir), reason), None)
            return subdirs
        # Most entries of a big tree are neither directories nor Python: one pass sets them
        # aside by name and file type (no path built, no stat), and notes the two files that
        # decide how the rest is walked. Entries are not sorted here: `_merge` sorts.
        kept: list[os.DirEntry[str]] = []
        named: dict[str, os.DirEntry[str]] = {}
        for entry in entries:
            name = entry.name
            if name in _DECIDING:
                named[name] = entry
            if not name.endswith(SUFFIXES):
                try:
                    if not entry.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    pass  # said below, where the entry is looked at again
            kept.append(entry)
        if rel_dir and _is_file("pyvenv.cfg", named):
            return subdirs
        if _is_file(".gitignore", named):
            own = os.path.join(directory, ".gitignore")
            patterns = patterns + _read_ignore_file(Path(own), Path(directory))
        self.walked[directory] = patterns
        index = _PatternIndex.of(patterns) if patterns else None
        for entry in kept:
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                rel = os.path.join(rel_dir, entry.name) if rel_dir else entry.name
                reason = f"cannot stat: {exc.strerror or exc}"
                self.add(rel, (self.spelled(rel), reason), None)
                continue
            if is_dir:
                if entry.name in DEFAULT_EXCLUDED_DIRS:
                    continue
            elif not entry.name.endswith(SUFFIXES):
                continue
            # (`entry.path` is `os.path.join(directory, entry.name)`, as `rel` is below.)
            path = entry.path
            rel = f"{rel_dir}{os.sep}{entry.name}" if rel_dir else entry.name
            if (index is not None and index.ignores(path, is_dir)) or self.excluded(path, is_dir):
                continue
            if is_dir:
                subdirs.append((path, rel, patterns))
                continue
            if is_link:
                self._link(path, rel)
            elif entry.is_file(follow_symlinks=False):  # a regular file (no stat needed)
                self.add(rel, self.spelled(rel), os.path.join(self.real_root, rel))
            elif (odd := _not_regular(path)) is not None:
                self.add(rel, (self.spelled(rel), odd), None)
            else:  # pragma: no cover - d_type said "not a file" but stat says it is
                self.add(rel, self.spelled(rel), os.path.join(self.real_root, rel))
        return subdirs

    def target_excluded(self, target: str) -> bool:
        """Whether the walk leaves out the real file ``target`` (inside the real root).

        A symlink in the tree must not reach a file that the walk itself would not touch:
        one in `.venv`, `build/`, a gitignored directory, or excluded by name.
        """
        rel = os.path.relpath(target, self.real_root)
        path = os.path.join(self.root, rel)
        patterns = self.walked.get(os.path.dirname(path))
        if patterns is None:  # its directory was not walked: excluded, or below one
            return True
        return _is_ignored(path, False, patterns) or self.excluded(path, False)

    def _link(self, path: str, rel: str) -> None:
        # Symlinked directories are never entered (their contents inside the tree are found
        # through their real path; outside it they are none of our business), so only
        # symlinked files get here.
        target = os.path.realpath(path)
        if not os.path.exists(target):
            self.add(rel, (self.spelled(rel), "broken symlink"), None)
        elif os.path.isdir(target):
            return
        elif not _is_within(target, self.real_root):
            reason = f"symlink points outside the tree ({target})"
            self.add(rel, (self.spelled(rel), reason), None)
        elif (odd := _not_regular(target)) is not None:
            self.add(rel, (self.spelled(rel), odd), None)
        else:
            self.links.append((_order(rel), self.spelled(rel), target))


def _missing(path: Path) -> str:
    """Why a path named on the command line cannot be opened."""
    if not os.path.islink(path):
        return "no such file or directory"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop (the link leads back to itself)"
    return "broken symlink"


def _explicit_link_outside(given: Path, real: str) -> str | None:
    """Why a file named on the command line is a symlink out of the tree, or None.

    Its tree is the directory it was named in, or the working directory (a pre-commit hook
    names files from the repository's root): the walk refuses the same link.
    """
    if not os.path.islink(given):
        return None
    trees = (os.path.realpath(given.absolute().parent), os.path.realpath(os.getcwd()))
    if any(_is_within(real, tree) for tree in trees):
        return None
    return f"symlink points outside the tree ({real})"


def discover(
    paths: Sequence[Path | str], *, exclude: Sequence[str | IgnorePattern] = ()
) -> Iterator[Path | tuple[Path, str]]:
    """Yield the files to migrate under ``paths``, in a deterministic (sorted) order.

    Directories are walked for ``*.py`` and ``*.ipynb``; ``.gitignore`` files in the walked
    directories and in their parents up to the git root are honoured, as are
    :data:`DEFAULT_EXCLUDED_DIRS`, any directory holding a ``pyvenv.cfg``, and the
    gitignore-style ``exclude`` patterns: a line of text is matched relative to each walked
    root and to the current directory; an :class:`IgnorePattern` relative to its own
    ``base`` only (a config file's directory). Symlinks are never followed out of the walked root, and no real
    file is yielded twice.

    A path given explicitly is always yielded, whatever the excludes say. A problem is
    yielded as ``(path, one-line reason)``: a missing path, an unreadable directory, a
    broken symlink, a symlinked file pointing outside the tree, or something that is not
    a regular file (a FIFO would block the run forever).
    """
    seen: set[str] = set()
    lines = [e for e in exclude if isinstance(e, str)]
    based = [e for e in exclude if isinstance(e, IgnorePattern)]
    cwd_excludes = parse_ignore_lines(lines, Path.cwd())
    for raw in paths:
        given = Path(raw)
        if not os.path.exists(given):
            seen.add(_problem_key(given))
            yield (given, _missing(given))
            continue
        if not given.is_dir():
            real = os.path.realpath(given)
            if (odd := _not_regular(given)) is not None:
                seen.add(_problem_key(given))
                yield (given, odd)
            elif (outside := _explicit_link_outside(given, real)) is not None:
                seen.add(_problem_key(given))
                yield (given, outside)
            elif real not in seen:
                seen.add(real)
                yield given
            continue
        root = str(given.absolute())
        walk = _Walk(
            given=given,
            root=root,
            real_root=os.path.realpath(given),
            excludes=parse_ignore_lines(lines, Path(root)),
            cwd_excludes=cwd_excludes,
            based=based,
            found=[],
            links=[],
        )
        walk.walk(root, "", _inherited_patterns(Path(root)))
        yield from _merge(walk, seen)


def _merge(walk: _Walk, seen: set[str]) -> Iterator[Path | tuple[Path, str]]:
    """Yield a walk's results in path order; a link is kept only if its target is not."""
    regular = {real for _, item, real in walk.found if real is not None}
    items = list(walk.found)
    items += [
        (key, link, target)
        for key, link, target in walk.links
        if target not in regular and not walk.target_excluded(target)
    ]
    items.sort(key=lambda entry: entry[0])
    for _, item, real in items:
        key = (
            real if real is not None else _problem_key(item[0]) if isinstance(item, tuple) else None
        )
        if key is not None:
            if key in seen:
                continue  # said once, even when its directory is given too
            seen.add(key)
        yield item


def _order(rel: str) -> str:
    """A path's sort key: its parts in order, compared part by part (`a/b` before `a-b`,
    as a list of parts sorts): the separator becomes NUL, which sorts before any character
    a file name can hold, and strings compare faster than lists."""
    return rel.replace(os.sep, "\0")


def _problem_key(path: Path) -> str:
    """How a path that cannot be migrated is told apart from the real paths in `seen`."""
    return "\0" + os.path.abspath(path)
