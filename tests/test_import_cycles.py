"""No import cycles between gpufleet's modules, including the ones an import inside a function hides: such an
import only moves the cycle to run time, where the order of first use decides whether it works.

Every `import` statement counts, at module level or inside a function, except those under `if TYPE_CHECKING:`
(annotations only, never run). A module importing its own package (`from gpufleet import cloud_init`) is not an edge:
the package is always imported first.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_architecture import PACKAGE_OF_FOLDER, ROOT

# Cycles known and not yet broken, each a set of modules. The list only shrinks: a cycle broken must leave it.
KNOWN_CYCLES: list[set[str]] = []


def module_names() -> dict[str, tuple[Path, tuple[str, ...]]]:
    """{module name: (file, package parts)} for every module of the installed package."""
    found = {}
    for folder, package in PACKAGE_OF_FOLDER.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = package + path.relative_to(ROOT / folder).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = (path, parts[:-1])
    return found


def runtime_imports(tree: ast.Module, annotations: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Import statements that can run: anywhere except under `if TYPE_CHECKING:` (those too with `annotations`)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if not annotations and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(annotations: bool = False) -> dict[str, set[str]]:
    modules = module_names()
    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        targets: set[str] = set()
        for node in runtime_imports(ast.parse(path.read_text()), annotations):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
                continue
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets |= {module} | {f"{module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function():
    tree = ast.parse("def f():\n    from b import x\nif TYPE_CHECKING:\n    import c\n")
    assert [ast.unparse(node) for node in runtime_imports(tree)] == ["from b import x"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_new_import_cycles():
    found = cycles(import_graph())
    new = [sorted(cycle) for cycle in found if cycle not in KNOWN_CYCLES]
    assert new == [], f"import cycles {new}: move what both sides need into a module of its own"
    gone = [sorted(cycle) for cycle in KNOWN_CYCLES if cycle not in found]
    assert gone == [], f"{gone} no longer form a cycle: remove them from KNOWN_CYCLES"


def test_no_cycle_even_through_imports_made_only_for_annotations():
    """An annotation-only import that closes a cycle still ties the two modules' designs together (the catalog's
    cost and selector were such a pair): what both need belongs in a module of its own."""
    assert cycles(import_graph(annotations=True)) == []
