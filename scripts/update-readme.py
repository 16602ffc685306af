"""Regenerate the README's rules table from the catalogue (rules/*.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from est2tpu.catalogue import markdown_table

README = Path(__file__).resolve().parent.parent / "README.md"
text = README.read_text(encoding="utf-8")
new = re.sub(
    r"(<!-- rules-table:start -->\n).*?(<!-- rules-table:end -->)",
    lambda m: m.group(1) + markdown_table() + m.group(2),
    text,
    flags=re.DOTALL,
)
README.write_text(new, encoding="utf-8")
