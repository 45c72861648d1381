"""The JSON Schema of scenario files, generated from the pydantic models.

The models hold quantities as integers in base units after conversion, but
files write them as strings with units ("10Mbps") or plain numbers in base
units; the generated schema says so for every such field. `mpsim schema`
prints it (JSON Schema 2020-12) for validators and editors.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel

from . import units
from .scenario import Scenario, _loss_input

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_NUMBER_OR_STRING = [{"type": "string"}, {"type": "number"}]
_QUANTITIES: dict[Any, tuple[str, str]] = {
    units.parse_time: ("time", 'a string with a unit ("60s", "45ms", "250us", "10ns") or a number of seconds'),
    units.parse_rate: ("rate", 'a string with a unit ("10Mbps", "500kbps", "1Gbps") or a number of bit/s'),
    units.parse_size: ("size", 'a string with a unit ("1500B", "64KB", "64KiB", "5MB") or a number of bytes'),
    units.parse_queue: ("queue", 'a number of packets ("100pkt") or a size ("64KB")'),
    units.parse_probability: ("probability", "a number in [0, 1]"),
}

# Defaults are held in base units (picoseconds for times): shown as files write them.
_FORMATS = {"time": units.format_time, "rate": units.format_rate, "size": lambda n: f"{n}B"}


def scenario_schema() -> dict[str, Any]:
    """The schema document: the models' schema with quantity fields as files write them."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    defs = schema.get("$defs", {})
    for model in _models(Scenario):
        target = schema if model is Scenario else defs.get(model.__name__)
        if target is not None:
            _fix_properties(model, target.get("properties", {}))
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "mpsim scenario file (format 1)",
        "description": "A scenario for the mpsim simulator: network, traffic and what to record "
        "(docs/scenario-reference.md).",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """`root` and every model reachable from its fields."""
    found: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.append(model)
        for field in model.model_fields.values():
            todo.extend(t for t in _leaf_types(field.annotation) if isinstance(t, type) and issubclass(t, BaseModel))
    return found


def _leaf_types(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Annotated:
        return _leaf_types(args[0])
    if args:
        return [t for a in args for t in _leaf_types(a)]
    return [annotation]


def _validators(annotation: Any, metadata: list[Any]) -> list[Any]:
    """The functions of every BeforeValidator on a field, however nested."""
    found = [getattr(m, "func", None) for m in metadata]
    if typing.get_origin(annotation) is Annotated:
        base, *extra = typing.get_args(annotation)
        found += [getattr(m, "func", None) for m in extra] + _validators(base, [])
    else:
        for arg in typing.get_args(annotation):
            found += _validators(arg, [])
    return [f for f in found if f is not None]


def _is_list(annotation: Any) -> bool:
    return any(typing.get_origin(a) is list for a in [annotation, *typing.get_args(annotation)])


def _fix_properties(model: type[BaseModel], properties: dict[str, Any]) -> None:
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in properties:
            continue
        funcs = _validators(field.annotation, list(field.metadata))
        prop = properties[key]
        kept = {k: prop[k] for k in ("default", "title") if k in prop}
        if _loss_input in funcs:
            if isinstance(kept.get("default"), dict):
                kept["default"] = 0.0  # no loss
            properties[key] = {
                **kept,
                "anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"$ref": "#/$defs/Loss"}],
                "description": "a probability of independent loss, or a loss model table",
            }
            continue
        quantity = next((_QUANTITIES[f] for f in funcs if f in _QUANTITIES), None)
        if quantity is None:
            continue
        kind, words = quantity
        if isinstance(kept.get("default"), int) and kind in _FORMATS:
            kept["default"] = _FORMATS[kind](kept["default"])  # "1s", not 10**12 (picoseconds)
        one = {"anyOf": list(_NUMBER_OR_STRING), "description": f"{kind}: {words}"}
        if _is_list(field.annotation):
            properties[key] = {**kept, "type": "array", "items": one, "description": f"{kind}s: {words}"}
        else:
            properties[key] = {**kept, **one}
