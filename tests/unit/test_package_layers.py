"""The package layout is the pipeline (docs/architecture.md, "Layers"): imports go
downward only, no module imports itself through others, and no module outside the
interpreter uses a private name of it.

Every `import` statement counts, at module level or inside a function: a lazy import
is still a dependency.  The checks read the source (nothing is imported).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rlang"

#: The layers, lowest first (docs/architecture.md).  A module may import modules of
#: its own layer and of the layers below; never one above.
LAYERS = [
    ("kernel", ("span", "records", "errors", "ieee", "deep", "disk_cache", "dual", "gvalue", "complex_math", "primitives",
                "numbers",
                "types_rules", "values", "threads")),
    ("frontend", ("frontend",)),
    ("interp", ("interp",)),
    ("ir", ("ir",)),
    ("lower", ("lower",)),
    ("ad", ("ad",)),
    ("backends", ("backends",)),
    ("surface", ("__init__", "__main__", "api", "transforms", "batching", "bridges", "dask", "cuda", "cli", "arguments",
                 "highlight",
                 "repl", "debug")),
]

#: Sibling packages of one layer that must not import each other.
SIBLINGS = [("backends.llvm", "backends.cuda")]


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name relative to `rlang` ('' is rlang)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The rlang modules an import statement of `module` imports (relative to rlang)."""
    if isinstance(node, ast.Import):
        return [alias.name[len("rlang."):] if alias.name != "rlang" else ""
                for alias in node.names
                if alias.name == "rlang" or alias.name.startswith("rlang.")]
    if node.level:
        parts = module.split(".") if module else []
        if not _is_package(module):
            parts = parts[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    elif node.module == "rlang" or (node.module or "").startswith("rlang."):
        base = node.module[len("rlang."):] if node.module != "rlang" else ""
    else:
        return []
    found = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}" if base else alias.name
        found.append(submodule if submodule in MODULES else base)
    return found


def _imports() -> dict[str, set[str]]:
    """module → the rlang modules it imports anywhere in its source."""
    edges = {}
    for name, path in MODULES.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets.update(t for t in _resolve(name, node) if t != name)
        edges[name] = targets
    return edges


IMPORTS = _imports()


def layer_of(module: str) -> int:
    """The index in LAYERS of the layer `module` belongs to."""
    top = module.split(".")[0] if module else "__init__"
    for rank, (_, members) in enumerate(LAYERS):
        if top in members:
            return rank
    raise AssertionError(f"rlang.{module} belongs to no layer: add it to LAYERS and to "
                         "docs/architecture.md")


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


def test_imports_go_downward():
    upward = [f"rlang.{m} ({LAYERS[layer_of(m)][0]}) imports rlang.{t} "
              f"({LAYERS[layer_of(t)][0]})"
              for m, targets in IMPORTS.items() for t in targets
              if t and layer_of(t) > layer_of(m)]
    assert upward == []


def test_sibling_backends_do_not_import_each_other():
    crossing = [f"rlang.{m} imports rlang.{t}"
                for a, b in SIBLINGS for m, targets in IMPORTS.items() for t in targets
                for x, y in ((a, b), (b, a))
                if (m == x or m.startswith(x + ".")) and (t == y or t.startswith(y + "."))]
    assert crossing == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def test_no_import_cycles():
    # `from .. import __version__` (the REPL's banner) reads a constant of rlang/__init__
    edges = {m: {t for t in targets if t != ""} for m, targets in IMPORTS.items()}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_layer_rule_sees_lazy_imports():
    source = "def f():\n    from ..backends.llvm import emit\n"
    node = ast.parse(source).body[0].body[0]
    assert _resolve("ad.drivers", node) == ["backends.llvm.emit"]


def _private_interpreter_names() -> set[str]:
    """The private methods and attributes the interpreter's classes define."""
    names = set()
    for module, path in MODULES.items():
        if not module.startswith("interp"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.name.startswith("_") and not node.name.startswith("__"):
                names.add(node.name)
    return names


def test_no_private_name_of_the_interpreter_outside_it():
    private = _private_interpreter_names()
    uses = []
    for module, path in MODULES.items():
        if module.startswith("interp"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                owner = node.value
                inherited = (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) or \
                    (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                     and owner.func.id == "super")
                if not inherited:
                    uses.append(f"rlang.{module}:{node.lineno} uses .{node.attr}")
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(module, node)
                uses += [f"rlang.{module}:{node.lineno} imports {alias.name}"
                         for alias, target in zip(node.names, targets)
                         if target.startswith("interp") and alias.name.startswith("_")]
    assert uses == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m))
def test_no_module_over_800_lines(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= 800, f"rlang/{MODULES[module].relative_to(PACKAGE)} has {lines} lines"


def test_import_rlang_imports_no_compiler_and_no_parser():
    """`import rlang` stays cheap: llvmlite, numba and lark come with the first use."""
    import subprocess
    import sys

    code = ("import sys, rlang\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'llvmlite', 'numba', 'lark', 'jax', 'torch'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=PACKAGE.parent, check=True)
    assert done.stdout.strip() == "[]"


def test_every_package_is_installed():
    """pyproject.toml lists the packages setuptools installs: a package missing there
    works from the source tree and is absent from a fresh install (as CI makes)."""
    import re

    text = (PACKAGE.parent / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(rlang(?:\.\w+)*)"', re.search(
        r"^packages = \[(.*?)\]", text, re.S | re.M).group(1)))
    packages = {"rlang" + ("." + name if name else "") for name in MODULES
                if _is_package(name)}
    packages -= {"rlang.grammar"}       # (from grammar/, listed with its package-dir)
    assert packages - listed == set()
