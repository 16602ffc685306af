"""A content-hash cache of per-file results, so that an unchanged file is never parsed twice.

A result is reused only when everything that decided it is the same: the file's bytes and
path, the tool's own code (a hash of the installed est2tpu sources and the LibCST version),
the run's settings (target, rules selected and ignored, the file's per-file ignores, the
runtime flag), and, because migration is whole-project, a digest of the project index the
file was migrated against. A key that differs in any of them misses; nothing is ever
patched up. The cache holds JSON only (never pickle), so a cache directory that came with a
repository cannot make est2tpu run code.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from est2tpu.ftypes import Edit, FileResult, Finding, MigrationError, Position, Status

__all__ = [
    "Cache",
    "default_dir",
    "digest",
    "index_digest",
    "restore_result",
    "stamp_of",
    "stat_stamp",
    "store_result",
    "tool_fingerprint",
]

#: Bump when the layout of a cache file changes.
FORMAT = 1


def digest(*parts: bytes | str) -> str:
    """A stable hex digest of byte/str parts (length-prefixed, so parts cannot run together).
    SHA-256 from OpenSSL hashes a tree's files about twice as fast as hashlib's own BLAKE2b
    here (20 MB: 15 against 27 ms); 160 of its bits are kept."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:40]


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The tool's own code: every est2tpu source file, the LibCST version, and the Python
    that runs it (what parses and compiles, and so what a file becomes, depends on it).

    A developer who edits a rule gets fresh results without thinking of the cache.
    """
    import est2tpu

    root = os.path.dirname(os.path.realpath(est2tpu.__file__))
    parts: list[bytes | str] = [
        str(FORMAT),
        est2tpu.__version__,
        _libcst_version(),
        f"{sys.implementation.name} {sys.version}",
    ]
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        below = os.path.relpath(folder, root).replace(os.sep, "/")
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    parts += [f"{below}/{name}", f.read()]
    return digest(*parts)


def _libcst_version() -> str:
    """LibCST's version without importing it (a warm run never needs the parser): its
    generated `_version.py`, read beside the package; `importlib.metadata` (which searches
    every distribution on sys.path: 10-25 ms of a 0.3 s warm run) only where that file is
    missing."""
    import importlib.util

    spec = importlib.util.find_spec("libcst")
    if spec is not None and spec.origin is not None:
        try:
            return (Path(spec.origin).parent / "_version.py").read_text("utf-8")
        except OSError:
            pass
    try:
        from importlib.metadata import version

        return version("libcst")
    except Exception:  # noqa: BLE001 - any failure only makes the key more specific
        return str(spec.origin if spec is not None else "?")


def _canon(obj: Any) -> Any:
    """A JSON-able, order-independent form of index data (sets sorted, dataclasses by field)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [
            type(obj).__name__,
            [[f.name, _canon(getattr(obj, f.name))] for f in dataclasses.fields(obj)],
        ]
    if isinstance(obj, enum.Enum):
        return _canon(obj.value)
    if isinstance(obj, Mapping):
        items = [[_canon(k), _canon(v)] for k, v in obj.items()]
        return ["map", sorted(items, key=json.dumps)]
    if isinstance(obj, (set, frozenset)):
        return ["set", sorted((_canon(x) for x in obj), key=json.dumps)]
    if isinstance(obj, (list, tuple)):
        return [_canon(x) for x in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot fingerprint {type(obj).__name__}")


def index_digest(index: object) -> str:
    """A digest of every fact in a ProjectIndex (any change anywhere changes it)."""
    return digest(json.dumps(_canon(index), separators=(",", ":")))


def default_dir() -> Path:
    """`$XDG_CACHE_HOME/est2tpu` (`~/.cache/est2tpu`): outside the project, so that `check`
    writes nothing into the tree it checks. `--cache-dir .est2tpu_cache` keeps it in the
    project (that name is gitignored)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "est2tpu"


class Cache:
    """Results of one kind of run (one settings key), loaded once and saved once.

    Only what this run used is kept on save, so the file never grows with old entries.
    """

    def __init__(self, directory: Path, settings: str, roots: Sequence[Path] = ()) -> None:
        self.directory = directory
        self.settings = settings
        # One file per tool version, settings and set of paths: runs over different
        # projects do not evict each other.
        # realpath, not Path.resolve: a symlink loop among the paths is that file's error
        # (reported by the walk), not a crash of the cache.
        where = [os.path.realpath(p) for p in roots]
        name = digest(tool_fingerprint(), settings, *where)[:24]
        self.file = directory / f"results-{name}.json"
        self._index: dict[str, str] = {}
        self._files: dict[str, Any] = {}
        self._new_index: dict[str, str] = {}
        self._new_files: dict[str, Any] = {}
        self._unmatched: dict[str, Any] = {}  # path -> [stat stamp, digest of the bytes]
        self._new_unmatched: dict[str, Any] = {}
        self._passed: dict[str, Any] = {}  # the same, of files that passed the pre-filter
        self._new_passed: dict[str, Any] = {}
        self._notebooks: set[str] = set()  # digests of notebooks whose cells parse
        self._new_notebooks: set[str] = set()
        self._loaded = False  # a well-formed file was read
        self.hits = 0
        self.misses = 0
        self._load()

    def _load(self) -> None:
        try:
            # Never through a symlink: a cache file is data from disk, read only where it is.
            fd = os.open(self.file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, encoding="utf-8") as f:
                data = json.loads(f.read())
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return
        if data.get("settings") != self.settings:
            return
        index, files = data.get("index"), data.get("files")
        if isinstance(index, dict) and isinstance(files, dict):
            self._index, self._files = index, files
        notebooks = data.get("notebooks")
        if isinstance(notebooks, list):
            self._notebooks = {str(d) for d in notebooks}
        passed = data.get("passed")
        if isinstance(passed, dict):
            self._passed = passed
        unmatched = data.get("unmatched")
        if isinstance(unmatched, dict):
            self._unmatched = unmatched
            self._loaded = True

    # -- files the byte pre-filter skipped, by their stat ----------------------------------

    def unmatched(self, path: Path, stamp: str | None) -> str | None:
        """Did the pre-filter skip this very file (same path, inode, size, mtime and ctime)?
        Then the digest of its bytes (as they were when it was skipped), else None.

        A warm run then neither reads nor scans it: most files of a big tree are skipped,
        and reading them was most of a warm run's time.
        """
        entry = self._unmatched.get(str(path)) if stamp is not None else None
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == stamp):
            return None
        self._new_unmatched[str(path)] = entry
        return str(entry[1])

    def put_unmatched(self, path: Path, stamp: str | None, contents: str) -> None:
        """Remember a file the pre-filter skipped: its stat stamp and the digest of its bytes."""
        if stamp is not None:
            self._new_unmatched[str(path)] = [stamp, contents]

    # -- files that passed the pre-filter, by their stat ----------------------------------

    def passed(self) -> dict[str, tuple[str, str]]:
        """Files that passed the byte pre-filter, had no skip-file comment and decoded:
        path -> (stat stamp, digest of their bytes). A scan that reads such a file and finds
        it with that very stamp after reading (`stamp_of` its open file) knows those answers
        and the digest without computing them (`runner.scan_one`)."""
        return {
            path: (str(entry[0]), str(entry[1]))
            for path, entry in self._passed.items()
            if isinstance(entry, list) and len(entry) == 2
        }

    def put_passed(self, path: Path, stamp: str | None, contents: str) -> None:
        """Remember a file that passed the pre-filter: its stat stamp (taken before it was
        read) and the digest of the bytes read."""
        if stamp is not None:
            self._new_passed[str(path)] = [stamp, contents]

    # -- notebooks whose cells parse, by the digest of their bytes -------------------------

    def parsed_notebooks(self) -> frozenset[str]:
        """Digests of notebooks a run of this tool found to parse cell by cell: scanning them
        again needs no parser (`notebook.load(check_cells=False)`)."""
        return frozenset(self._notebooks)

    def put_notebook(self, contents: str) -> None:
        """Remember a notebook (the digest of its bytes) whose cells parse."""
        self._new_notebooks.add(contents)

    # -- the project index: its inputs -> the digest of its facts ------------------------

    def index_for(self, inputs_key: str) -> str | None:
        found = self._index.get(inputs_key)
        if found is not None:
            self._new_index[inputs_key] = found
        return found

    def put_index(self, inputs_key: str, facts: str) -> None:
        self._new_index[inputs_key] = facts

    # -- per-file results -----------------------------------------------------------------

    @staticmethod
    def file_key(path: Path, content: str, index: str, ignores: Iterable[str]) -> str:
        return digest(str(path), content, index, "\0".join(sorted(ignores)))

    def get(self, key: str, result: FileResult) -> bool | None:
        """Fill `result` from the cache: None on a miss, else whether it fails early."""
        entry = self._files.get(key)
        if not isinstance(entry, dict):
            self.misses += 1
            return None
        try:
            restore_result(entry, result)
            _verify(result)
        except (KeyError, TypeError, ValueError, SyntaxError, MigrationError):
            self.misses += 1
            return None
        self._new_files[key] = entry
        self.hits += 1
        return bool(entry.get("early"))

    def put(self, key: str, result: FileResult, early: bool) -> None:
        self._new_files[key] = store_result(result, early)

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is only a slower next run.

        Not at all when this run used exactly what was loaded (a warm run over an
        unchanged tree): the file already says it.
        """
        if (
            self._loaded
            and self._new_index == self._index
            and self._new_files == self._files
            and self._new_unmatched == self._unmatched
            and self._new_passed == self._passed
            and self._new_notebooks == self._notebooks
        ):
            return
        data = {
            "format": FORMAT,
            "settings": self.settings,
            "index": self._new_index,
            "files": self._new_files,
            "unmatched": self._new_unmatched,
            "passed": self._new_passed,
            "notebooks": sorted(self._new_notebooks),
        }
        import tempfile  # here: a warm run over an unchanged tree writes nothing

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            _create_gitignore(self.directory / ".gitignore")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, separators=(",", ":"))
                os.replace(tmp, self.file)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass


#: A file changed this recently may change again within its timestamps' resolution without
#: them moving: its stamp is not trusted. This is git's "racy clean" rule and ccache's rule
#: for include files (an mtime or ctime not older than the run is not trusted), with 2 s of
#: margin for file systems that keep coarse times (FAT keeps mtime in 2 s steps). ruff keys
#: its cache by mtime and permissions alone.
RACY_SECONDS = 2.0


def stat_stamp(path: Path | str, now: float | None = None) -> str | None:
    """What identifies a file's contents without reading them (taken before reading it):
    device, inode, size, mtime and ctime in nanoseconds. None when it cannot be trusted:
    the file cannot be stat'ed, or changed too recently (see RACY_SECONDS).

    The ctime is what no one can set: a rewrite that keeps the size and puts the mtime
    back (`touch -d`, `os.utime`) still moves it; a file replaced by another (an editor's
    atomic save) has another inode."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return stamp_of(st, now)


def stamp_of(st: os.stat_result, now: float | None = None) -> str | None:
    """`stat_stamp` of a stat result (of an open file: `os.fstat`)."""
    if now is None:
        now = time.time()
    if max(st.st_mtime_ns, st.st_ctime_ns) >= (now - RACY_SECONDS) * 1e9:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _create_gitignore(path: Path) -> None:
    """Write `*` to a new .gitignore; never through a symlink, never over a file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:  # also a symlink, dangling or not
        return
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("*\n")


def _verify(result: FileResult) -> None:
    """Check a restored result's new text as the pipeline checked it: it must compile.

    The cache is data from disk that anyone could have written; what it says a file
    becomes is never written to the file unchecked. Raises SyntaxError or MigrationError.
    """
    new = result.new_text
    if result.status is not Status.CHANGED or new is None or new == result.old_text:
        return
    if result.path.suffix == ".ipynb":
        from est2tpu import notebook

        # compiled just below: its cells need no parse of their own
        new = notebook.load(new.encode("utf-8"), check_cells=False).program
    try:
        compile(new, str(result.path), "exec", dont_inherit=True)
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise MigrationError(str(exc)) from None


def store_result(result: FileResult, early: bool) -> dict[str, Any]:
    return {
        "status": result.status.value,
        # The old text is the file itself; only a changed file's new text is stored.
        "new": result.new_text if result.new_text != result.old_text else None,
        "error": result.error,
        "early": early,
        "findings": [
            [f.rule_id, f.message, f.position.line, f.position.column, f.path, f.fixable]
            for f in result.findings
        ],
        "edits": [
            [e.rule_id, e.position.line, e.position.column, e.description] for e in result.edits
        ],
    }


def restore_result(entry: dict[str, Any], result: FileResult) -> None:
    status = Status(entry["status"])
    findings = [
        Finding(str(r), str(m), Position(int(line), int(col)), str(p), bool(fix))
        for r, m, line, col, p, fix in entry["findings"]
    ]
    edits = [
        Edit(str(r), Position(int(line), int(col)), str(d)) for r, line, col, d in entry["edits"]
    ]
    new = entry["new"]
    result.status = status
    result.new_text = result.old_text if new is None else str(new)
    result.error = entry["error"]
    result.findings = findings
    result.edits = edits
