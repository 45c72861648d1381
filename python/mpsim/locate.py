"""Line numbers for key paths, so every scenario error can say `FILE:LINE`.

tomllib and yaml.safe_load return plain data without positions. These
helpers map each key path of a scenario file (`("flow", 2, "cc")`) to the
1-based line where it is written. They run only on text the real parser has
already accepted, so they can be forgiving: a construct they do not follow
costs a line number (the lookup falls back to the enclosing table), never an
error.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

import yaml

Loc = tuple[Any, ...]
LineMap = dict[Loc, int]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def lookup_line(lines: LineMap, loc: Loc) -> int | None:
    """The line of `loc`, else of its nearest enclosing key or table, else None."""
    for n in range(len(loc), 0, -1):
        line = lines.get(tuple(loc[:n]))
        if line is not None:
            return line
    return None


def format_loc(loc: Loc) -> str:
    """A key path as users write it: ("flow", 2, "cc") -> "flow[2].cc"."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# ---------------------------------------------------------------- TOML


class _TomlScanner:
    """Walks TOML text recording the line of every key, table and array item."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: LineMap = {}
        self.arrays: dict[Loc, int] = {}  # concrete path of an array of tables -> last index
        self.table: Loc = ()

    def line(self, pos: int | None = None) -> int:
        return bisect.bisect_left(self.newlines, self.i if pos is None else pos) + 1

    def peek(self, k: int = 1) -> str:
        return self.s[self.i : self.i + k]

    def record(self, loc: Loc, pos: int | None = None) -> None:
        self.lines.setdefault(loc, self.line(pos))

    def skip(self, newlines: bool) -> None:
        """Skip blanks and comments (and newlines when asked)."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            else:
                return

    def run(self) -> LineMap:
        while True:
            self.skip(newlines=True)
            if self.i >= len(self.s):
                return self.lines
            if self.peek() == "[":
                self.header()
            else:
                self.key_value(self.table)

    def key(self) -> list[str]:
        """A dotted key: bare or quoted parts separated by dots."""
        parts: list[str] = []
        while True:
            self.skip(newlines=False)
            c = self.peek()
            if c in ('"', "'"):
                start = self.i
                self.string()
                parts.append(self.s[start + 1 : self.i - 1])
            else:
                m = _BARE_KEY.match(self.s, self.i)
                if m is None:
                    raise ValueError("bad key")
                parts.append(m.group())
                self.i = m.end()
            self.skip(newlines=False)
            if self.peek() != ".":
                return parts
            self.i += 1

    def resolve(self, keys: list[str]) -> Loc:
        """The concrete path of a dotted key: arrays of tables get their last index."""
        loc: Loc = ()
        for k in keys:
            loc += (k,)
            if loc in self.arrays:
                loc += (self.arrays[loc],)
        return loc

    def header(self) -> None:
        start = self.i
        is_array = self.peek(2) == "[["
        self.i += 2 if is_array else 1
        keys = self.key()
        self.i += 2 if is_array else 1
        if is_array:
            parent = self.resolve(keys[:-1]) + (keys[-1],)
            index = self.arrays.get(parent, -1) + 1
            self.arrays[parent] = index
            self.record(parent, start)
            self.table = parent + (index,)
        else:
            self.table = self.resolve(keys)
        self.record(self.table, start)

    def key_value(self, table: Loc) -> None:
        start = self.i
        loc = table + tuple(self.key())
        self.record(loc, start)
        self.skip(newlines=False)
        if self.peek() != "=":
            raise ValueError("expected '='")
        self.i += 1
        self.skip(newlines=False)
        self.value(loc)

    def value(self, loc: Loc) -> None:
        c = self.peek()
        if c in ('"', "'"):
            self.string()
        elif c == "[":
            self.array(loc)
        elif c == "{":
            self.inline_table(loc)
        else:
            while self.i < len(self.s) and self.s[self.i] not in ",]}\n#":
                self.i += 1

    def string(self) -> None:
        quote = self.peek()
        if self.peek(3) == quote * 3:
            end = self.s.find(quote * 3, self.i + 3)
            self.i = len(self.s) if end < 0 else end + 3
            while self.peek() == quote:  # up to two quotes may close the content
                self.i += 1
            return
        self.i += 1
        while self.i < len(self.s) and self.s[self.i] != quote:
            # Basic strings have escapes; literal strings do not.
            self.i += 2 if (quote == '"' and self.s[self.i] == "\\") else 1
        self.i += 1

    def array(self, loc: Loc) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip(newlines=True)
            if self.peek() in ("]", ""):
                self.i += 1
                return
            self.record(loc + (index,))
            self.value(loc + (index,))
            self.skip(newlines=True)
            if self.peek() == ",":
                self.i += 1
            index += 1

    def inline_table(self, loc: Loc) -> None:
        self.i += 1
        while True:
            self.skip(newlines=True)
            if self.peek() in ("}", ""):
                self.i += 1
                return
            self.key_value(loc)
            self.skip(newlines=True)
            if self.peek() == ",":
                self.i += 1


def toml_lines(text: str) -> LineMap:
    """Key path -> line for TOML text that tomllib accepted."""
    scanner = _TomlScanner(text)
    try:
        return scanner.run()
    except (ValueError, IndexError):
        # Past a construct we do not follow, keep what we have: lines are a courtesy.
        return scanner.lines


# ---------------------------------------------------------------- YAML


class YamlLoader(yaml.SafeLoader):
    """SafeLoader where only true/false are booleans.

    YAML 1.1 reads `on`, `off`, `yes`, `no` as booleans, which would turn the
    onoff app's `on = "5s"` key into `True`.
    """


YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


class DuplicateKey(Exception):
    """A YAML mapping with the same key twice (PyYAML would keep the last)."""

    def __init__(self, loc: Loc, line: int) -> None:
        super().__init__(format_loc(loc))
        self.loc = loc
        self.line = line


def yaml_lines(node: yaml.Node | None) -> LineMap:
    """Key path -> line from a composed YAML document; raises DuplicateKey."""
    lines: LineMap = {}
    if node is not None:
        _walk_yaml(node, (), lines)
    return lines


def _walk_yaml(node: yaml.Node, loc: Loc, lines: LineMap) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            child = loc + (key,)
            if key in seen:
                raise DuplicateKey(child, key_node.start_mark.line + 1)
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _walk_yaml(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = loc + (index,)
            lines[child] = item.start_mark.line + 1
            _walk_yaml(item, child, lines)
