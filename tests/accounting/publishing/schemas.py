"""Validators of the published JSON schemas shipped under tests/data/schemas (see its README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from referencing import Registry, Resource

SCHEMAS = Path(__file__).parents[2] / "data" / "schemas"


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return loaded


def cyclonedx_16() -> Draft7Validator:
    """CycloneDX 1.6 (draft-07), its $refs to spdx.schema.json and jsf-0.82.schema.json resolved locally."""
    registry: Registry = Registry()
    for name in ("spdx.schema.json", "jsf-0.82.schema.json"):
        schema = _load(name)
        registry = registry.with_resource(schema["$id"], Resource.from_contents(schema))
    return Draft7Validator(_load("bom-1.6.schema.json"), registry=registry)


def spdx_301() -> Draft202012Validator:
    """SPDX 3.0.1's JSON schema (draft 2020-12)."""
    return Draft202012Validator(_load("spdx-3.0.1-json-schema.json"))


def errors(validator: Draft7Validator | Draft202012Validator, document: dict[str, Any]) -> list[str]:
    """Every schema error, one line each (empty: valid)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(document)
    ]
