"""`[tool.est2tpu]` in pyproject.toml: found by walking up from the paths, or named with --config."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from est2tpu.discovery import IgnorePattern, is_ignored, parse_ignore_lines
from est2tpu.ftypes import MigrationError, Target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Config", "ConfigError", "find", "load", "load_for"]

KEYS = frozenset(
    {"target", "select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "runtime"}
)


class ConfigError(MigrationError):
    """A configuration file that cannot be used (one line, naming the file)."""


@dataclass(frozen=True)
class Config:
    """The settings of one `[tool.est2tpu]` table; None means "not set here"."""

    path: Path | None = None  # the pyproject.toml it came from
    target: Target | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    runtime: bool | None = None

    @property
    def root(self) -> Path:
        """The directory that relative globs are matched against."""
        return self.path.parent.absolute() if self.path else Path.cwd()

    def exclude_patterns(self, replaced: bool = False) -> list[IgnorePattern]:
        """`exclude` (unless --exclude ``replaced`` it) and `extend-exclude`, as gitignore
        lines of a file in this pyproject.toml's directory."""
        lines = [*([] if replaced else self.exclude or ()), *self.extend_exclude]
        return parse_ignore_lines(lines, self.root) if self.path is not None else []

    def excludes(self, path: Path, replaced: bool = False) -> bool:
        """Whether the config's excludes drop ``path`` (a file), as git would judge it: a
        file below an excluded directory is excluded; `!pattern` takes a file back."""
        return is_ignored(path, self.exclude_patterns(replaced))

    def ignores_for(self, path: Path) -> list[str]:
        """The rule IDs that `per-file-ignores` switches off for ``path``: its keys are
        gitignore patterns (as `exclude`'s), matched from this pyproject.toml's directory."""
        out: list[str] = []
        for patterns, ids in self._per_file_patterns:
            if is_ignored(path, patterns):
                out.extend(ids)
        return out

    @functools.cached_property
    def _per_file_patterns(self) -> list[tuple[list[IgnorePattern], list[str]]]:
        return [
            (parse_ignore_lines([glob], self.root), ids)
            for glob, ids in self.per_file_ignores.items()
        ]


def _read(path: Path) -> dict[str, Any]:
    """The TOML document; ConfigError when it cannot be read or is not valid TOML.

    A pyproject.toml that cannot be read might hold the `[tool.est2tpu]` table: ignoring
    it would silently drop its excludes, so it stops the run instead.
    """
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        # Python's TOML parser recurses once per nested array or inline table.
        raise ConfigError(f"{path}: cannot read: arrays or tables nested too deeply") from None


def _table(data: dict[str, Any], path: Path) -> Any:
    """`[tool.est2tpu]` of a parsed pyproject.toml, or None."""
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {type(tool).__name__}")
    return tool.get("est2tpu")


def _has_table(pyproject: Path) -> bool:
    return _table(_read(pyproject), pyproject) is not None


def find(paths: Iterable[Path | str]) -> Path | None:
    """The nearest pyproject.toml with a `[tool.est2tpu]` table above the first path.

    Raises ConfigError for a pyproject.toml on the way up that cannot be read or parsed.
    """
    for raw in paths:
        if str(raw) == "-":
            continue
        start = Path(os.path.abspath(raw))
        if not start.is_dir():
            start = start.parent
        for directory in (start, *start.parents):
            candidate = directory / "pyproject.toml"
            if candidate.is_file() and _has_table(candidate):
                return candidate
        return None
    return None


def _str_list(value: Any, key: str, source: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{source}: [tool.est2tpu] {key} must be a list of strings")


def _ids(value: Any, key: str, source: Path) -> list[str]:
    return [
        p.strip().upper() for v in _str_list(value, key, source) for p in v.split(",") if p.strip()
    ]


def load(path: Path) -> Config:
    """Read `[tool.est2tpu]` from ``path`` (a missing table is an empty config)."""
    table = _table(_read(path), path)
    if table is None:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.est2tpu] must be a table")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown [tool.est2tpu] key(s): {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KEYS))})"
        )
    target = None
    if "target" in table:
        try:
            target = Target(table["target"])
        except ValueError:
            choices = ", ".join(t.value for t in Target)
            raise ConfigError(
                f"{path}: [tool.est2tpu] target {table['target']!r} is not one of {choices}"
            ) from None
    runtime = table.get("runtime")
    if runtime is not None and not isinstance(runtime, bool):
        raise ConfigError(f"{path}: [tool.est2tpu] runtime must be true or false")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, Mapping):
        raise ConfigError(f"{path}: [tool.est2tpu] per-file-ignores must be a table")
    return Config(
        path=path,
        target=target,
        select=_ids(table["select"], "select", path) if "select" in table else None,
        ignore=_ids(table.get("ignore", []), "ignore", path),
        exclude=_str_list(table["exclude"], "exclude", path) if "exclude" in table else None,
        extend_exclude=_str_list(table.get("extend-exclude", []), "extend-exclude", path),
        per_file_ignores={
            str(glob): _ids(ids, f"per-file-ignores {glob!r}", path) for glob, ids in pfi.items()
        },
        runtime=runtime,
    )


def load_for(paths: Sequence[Path | str], explicit: Path | None = None) -> Config:
    """The config for a run: ``explicit`` (--config) if given, else the nearest one, else empty."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"{explicit}: no such config file")
        return load(explicit)
    found = find(paths)
    return load(found) if found else Config()
