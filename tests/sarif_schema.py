"""Validation of SARIF documents against the official SARIF 2.1.0 schema (tests/schemas)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json"


@lru_cache(maxsize=1)
def _validator() -> Any:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # Every format jsonschema knows: the schema is draft 4, whose own checker lacks the
    # "uri-reference" that artifactLocation.uri declares (checked with rfc3986-validator).
    checker = jsonschema.FormatChecker()
    assert "uri-reference" in checker.checkers, "pip install 'jsonschema[format-nongpl]'"
    return cls(schema, format_checker=checker)


def validate(text: str) -> dict[str, Any]:
    """The parsed document; raises jsonschema.ValidationError if it is not valid SARIF 2.1.0."""
    doc = json.loads(text)
    _validator().validate(doc)
    return dict(doc)
