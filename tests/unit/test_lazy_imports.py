"""MLflow and matplotlib are imported where they are used (a run imports them after its first
trials start): every function that names them imports them itself, or its module does."""

import ast
from pathlib import Path

import pytest

import mlgraph

LAZY = ("mlflow", "plt", "matplotlib")
SOURCES = sorted(Path(mlgraph.__file__).parent.rglob("*.py"))


def _imported(nodes) -> set[str]:
    return {
        (alias.asname or alias.name).split(".")[0]
        for node in nodes
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def _unbound(tree: ast.Module) -> list[str]:
    """Lines that use a lazily imported name that neither the function, an enclosing function
    nor the module (outside ``if TYPE_CHECKING:``) imports; annotations are strings here."""
    found = []

    def visit(node, bound: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = bound | _imported(ast.walk(child))
                for part in [*child.body, *child.args.defaults]:
                    visit_body(part, inner)
            elif isinstance(child, ast.ClassDef):
                visit(child, bound)

    def visit_body(node, bound: set[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            visit(ast.Module(body=[node], type_ignores=[]), bound)
            return
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(ast.Module(body=[sub], type_ignores=[]), bound)
            elif isinstance(sub, ast.Name) and sub.id in LAZY and sub.id not in bound:
                found.append(f"line {sub.lineno}: {sub.id}")

    visit(tree, _imported(tree.body))
    return sorted(set(found))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_use_of_a_lazily_imported_module_is_bound(path):
    assert _unbound(ast.parse(path.read_text())) == []


def test_the_check_finds_an_unbound_use():
    code = "def f():\n    return mlflow.MlflowClient()\ndef g():\n    import mlflow\n    return mlflow\n"
    assert _unbound(ast.parse(code)) == ["line 2: mlflow"]
