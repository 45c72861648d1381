"""Dotted-path overrides (`--set flow.ftp.cc=olia`) applied to raw scenario data.

Overrides change the data read from the file before validation, so an
overridden value is checked exactly like one written in the file. The path is
checked against the schema (the pydantic models), so a misspelt key is an
error even when the file does not contain it yet. Tables in arrays are
addressed by their `name` (or by index).
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ._toml import tomllib
from .errors import ScenarioError
from .locate import Loc

Override = tuple[str, Any]


def parse_value(text: str) -> Any:
    """An override value: a TOML scalar/array/inline table when it parses, else the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def normalize(overrides: Mapping[str, Any] | Iterable[str] | None) -> list[Override]:
    """Overrides as (dotted key, value) pairs, from a dict, `KEY=VALUE` strings or pairs."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [
            (str(k), parse_value(v) if isinstance(v, str) else v) for k, v in overrides.items()
        ]
    if isinstance(overrides, str):  # a lone "k=v" is a common slip for ["k=v"]
        overrides = [overrides]
    pairs = []
    for item in overrides:
        if isinstance(item, tuple) and len(item) == 2:  # an already parsed (key, value)
            pairs.append((str(item[0]), item[1]))
            continue
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ScenarioError("expected KEY=VALUE", key=f"--set {item}")
        pairs.append((key.strip(), parse_value(value.strip())))
    return pairs


# ------------------------------------------------------------ schema walk


def fields_by_alias(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """The model's fields keyed by the name used in scenario files."""
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def _strip_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _strip_optional(args[0])
    if origin is typing.Annotated:
        return _strip_optional(typing.get_args(annotation)[0])
    return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def field_model(field: FieldInfo) -> tuple[str, type[BaseModel] | None]:
    """("model", M) for a table, ("list", M) for an array of tables, else ("value", None)."""
    ann = _strip_optional(field.annotation)
    if _is_model(ann):
        return "model", ann
    if typing.get_origin(ann) in (list, tuple):
        args = typing.get_args(ann)
        if args and _is_model(_strip_optional(args[0])):
            return "list", _strip_optional(args[0])
    return "value", None


def model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class describing the table at `loc` (indices allowed), if any."""
    model: type[BaseModel] | None = root
    expect_index = False
    for part in loc:
        if model is None:
            return None
        if expect_index:
            expect_index = False
            continue
        field = fields_by_alias(model).get(part) if isinstance(part, str) else None
        if field is None:
            return None
        kind, model = field_model(field)
        expect_index = kind == "list"
    return None if expect_index else model


def unknown_key_message(key: str, model: type[BaseModel] | None) -> str:
    """`unknown key 'x'`, with a suggestion when a known key is close."""
    message = f"unknown key '{key}'"
    if model is not None:
        close = difflib.get_close_matches(key, fields_by_alias(model), n=1)
        if close:
            message += f" (did you mean '{close[0]}'?)"
    return message


# ------------------------------------------------------------ application


def apply(data: dict, overrides: list[Override], root: type[BaseModel]) -> dict[Loc, str]:
    """Apply overrides to `data` in place; returns concrete path -> `--set KEY` label."""
    applied: dict[Loc, str] = {}
    for key, value in overrides:
        label = f"--set {key}"
        loc = _apply_one(data, key.split("."), value, root, label, ())
        applied[loc] = label
    return applied


def _apply_one(
    node: dict, parts: list[str], value: Any, model: type[BaseModel], label: str, loc: Loc
) -> Loc:
    part, rest = parts[0], parts[1:]
    fields = fields_by_alias(model)
    if part not in fields:
        raise ScenarioError(unknown_key_message(part, model), key=label)
    if not rest:
        node[part] = value
        return loc + (part,)
    kind, child = field_model(fields[part])
    if kind == "value" or child is None:
        raise ScenarioError(f"'{part}' is a value, not a table", key=label)
    if kind == "model":
        return _apply_one(_child_table(node, part, label), rest, value, child, label, loc + (part,))
    # An array of tables: the next part names the item.
    if len(rest) == 1:
        raise ScenarioError(f"expected a key after '{part}.{rest[0]}'", key=label)
    item, index = _array_item(node, part, rest[0], label)
    return _apply_one(item, rest[1:], value, child, label, loc + (part, index))


def _child_table(node: dict, part: str, label: str) -> dict:
    child = node.setdefault(part, {})
    if not isinstance(child, dict):
        raise ScenarioError(f"'{part}' is not a table in the scenario", key=label)
    return child


def _array_item(node: dict, part: str, name: str, label: str) -> tuple[dict, int]:
    items = node.get(part)
    if not isinstance(items, list):
        items = []
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == name:
            return item, index
    if name.isdigit() and int(name) < len(items) and isinstance(items[int(name)], dict):
        return items[int(name)], int(name)
    raise ScenarioError(f"no {part} named '{name}'", key=label)
