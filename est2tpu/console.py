"""The command line's consoles: rich's `Console`, loaded only when what is written needs it."""

from __future__ import annotations

import builtins
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["LazyConsole"]

#: What makes rich treat a stream that is not a terminal as one (and style what it writes).
_FORCING = ("FORCE_COLOR", "TTY_COMPATIBLE")


class LazyConsole:
    """rich's `Console(stderr=stderr, highlight=False)`, built on first use.

    `out` of one line that rich would write as it is, to a stream rich would not style (a
    pipe or a file), writes it without rich: a warm `check --quiet` prints only such lines,
    and importing rich was a tenth of its time. A printable line (`str.isprintable`: no tab,
    no control character, no line break) is one rich writes as it is: `out` neither wraps,
    crops, highlights nor reads markup or emoji codes, and without a terminal rich writes
    no style. Anything else, and every other attribute, is rich's own.
    """

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self._console: Console | None = None

    @property
    def rich(self) -> Console:
        """The rich console itself (built now if it was not)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self.stderr, highlight=False)
        return self._console

    @property
    def is_terminal(self) -> bool:
        """rich's `Console.is_terminal`, known without rich for a pipe or a file."""
        if self._console is None and _unstyled(sys.stderr if self.stderr else sys.stdout):
            return False
        return self.rich.is_terminal

    def out(self, text: str, *, highlight: bool | None = None) -> None:
        """rich's `Console.out` of one string."""
        if self._console is None and not highlight and text.isprintable():
            stream = sys.stderr if self.stderr else sys.stdout
            if _unstyled(stream):
                stream.write(text + "\n")
                stream.flush()
                return
        self.rich.out(text, highlight=highlight)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)


def _unstyled(stream: Any) -> bool:
    """Whether rich would write to ``stream`` as to a file: not a terminal (nor told to
    act as one), not Jupyter (where it renders HTML), not a stream rich proxies."""
    if any(name in os.environ for name in _FORCING) or hasattr(builtins, "get_ipython"):
        return False
    if hasattr(stream, "rich_proxied_file"):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream: rich decides
        return False
