"""The package's layering holds: data flows one way, nothing imports upward.

Every module's imports are read with `ast` — at module level and inside functions, relative and
absolute, under ``if TYPE_CHECKING:`` too — and each ``finrl_tutorial`` module they name is placed
in its layer by `LAYERS`, the table of the paragraph in ``finrl_tutorial/__init__.py`` (a test below
checks that the two say the same). A module may import a lower layer, or its own room; anything
else fails, naming the file, the line and the import.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import finrl_tutorial

PACKAGE = Path(finrl_tutorial.__file__).resolve().parent

LAYERS = {
    0: ("rules", "errors", "atomic", "provenance", "metrics", "plots"),
    1: ("data",),
    2: ("envs",),
    3: ("agents",),
    4: ("backtest",),
    5: ("training",),
    6: ("bench",),
    7: ("book", "cli", "__main__", ""),  # "": the package's own exports (finrl_tutorial/__init__.py)
}
"""Layer → rooms. A room is a subpackage (``data`` …) or, in layers 0 and 7, a top-level module."""

SHARED_ROOM = {0: "foundations", 7: "entry points"}
"""The top-level modules of these layers form one room: they may import one another."""


def module_name(path: Path) -> str:
    parts = ("finrl_tutorial", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def room_of(module: str) -> tuple[int, str]:
    """``(layer, room)`` of a ``finrl_tutorial`` module; a module in no layer fails the test."""
    first = module.split(".")[1] if "." in module else ""
    for layer, rooms in LAYERS.items():
        if first in rooms:
            return layer, SHARED_ROOM.get(layer, first)
    pytest.fail(f"{module} is in no layer: add its room to LAYERS here and to the paragraph in "
                "finrl_tutorial/__init__.py")


def imported_modules(module: str, path: Path):
    """``(line, target, in_function)`` for every ``finrl_tutorial`` module ``module`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    functions = [node for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inside = {id(child) for function in functions for child in ast.walk(function) if child is not function}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from X import name`: the submodule X.name where there is one, else X itself
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "finrl_tutorial" or target.startswith("finrl_tutorial."):
                yield node.lineno, target, id(node) in inside


def edges():
    for module, path in MODULES.items():
        for line, target, in_function in imported_modules(module, path):
            yield module, path, line, target, in_function


def test_nothing_imports_upward():
    upward = []
    for module, path, line, target, in_function in edges():
        (layer, room), (target_layer, target_room) = room_of(module), room_of(target)
        if target_layer > layer or (target_layer == layer and target_room != room):
            where = " (inside a function)" if in_function else ""
            upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}{where} imports {target}: layer {layer} "
                          f"({room}) may import only lower layers and its own room, {target} is layer "
                          f"{target_layer} ({target_room})")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_cycles_between_modules():
    """Two modules that import each other (at any depth) hide which one is the lower; a package's
    ``__init__`` re-exporting its own modules is not counted."""
    graph: dict[str, set[str]] = {}
    for module, path, _, target, _ in edges():
        if path.name != "__init__.py" and target != module and not MODULES[target].name == "__init__.py":
            graph.setdefault(module, set()).add(target)
    cycles = []
    state: dict[str, str] = {}

    def visit(module, trail):
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif target not in state:
                visit(target, trail + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_package_docstring_states_the_same_layers():
    """The paragraph a newcomer reads is the table this test checks."""
    paragraph = finrl_tutorial.__doc__.split("Layers", 1)[1].split("\n\n", 1)[0]
    stated = {int(number): set(re.findall(r"``(\w+)``", names))  # "3 ``agents``", "7 ``book``, ``cli``"
              for number, names in re.findall(r"(\d)\s+((?:``\w+``,?\s*)+)", paragraph)}
    expected = {layer: {room for room in rooms if room not in ("", "__main__")} for layer, rooms in LAYERS.items()}
    assert stated == expected


def test_every_module_has_a_layer():
    for module in MODULES:
        room_of(module)
