"""The package's layers as a picture, drawn from the code's imports when the docs are built.

The layers are those of the import-linter contract in ``pyproject.toml`` (``make lint`` holds
them); the imports are read by grimp (import-linter's own graph, lazy imports included). Each
layer is a row, top to bottom, with its modules and lines of code; an arrow from a row to a row
below it counts the imports between them. An import that climbs a layer is drawn in red (``make
lint`` fails on it, so a built site never shows one).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PICTURE = "_static/layers.svg"  # under docs/, ignored by git


@dataclass
class Layer:
    packages: list[str]  # independent siblings share a row
    modules: dict[str, int]  # module -> lines


def contract_layers(pyproject: Path = ROOT / "pyproject.toml") -> list[list[str]]:
    """The layers of the first ``layers`` contract, top first, each a list of sibling packages."""
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [[name.strip() for name in row.split("|")] for row in contract["layers"]]


def _lines(module: str) -> int:
    base = ROOT / "src" / Path(*module.split("."))
    path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def measure(root_package: str = "mlgraph") -> tuple[list[Layer], dict[tuple[int, int], int]]:
    """The layers with their modules' line counts, and (from row, to row) -> number of imports."""
    import grimp

    graph = grimp.build_graph(root_package)
    layers = [Layer(packages, {}) for packages in contract_layers()]
    row_of = {}
    for module in sorted(graph.modules):
        for i, layer in enumerate(layers):
            if any(module == p or module.startswith(p + ".") for p in layer.packages):
                layer.modules[module] = _lines(module)
                row_of[module] = i
    arrows: dict[tuple[int, int], int] = {}
    for importer, row in row_of.items():
        for imported in graph.find_modules_directly_imported_by(importer):
            target = row_of.get(imported)
            if target is not None and target != row:
                arrows[row, target] = arrows.get((row, target), 0) + 1
    return layers, arrows


def draw(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    layers, arrows = measure()
    height = 0.9 * len(layers) + 0.4
    fig, ax = plt.subplots(figsize=(9.5, height))
    ax.set_xlim(0, 10)
    ax.set_ylim(-height + 0.2, 0.4)
    ax.axis("off")
    for i, layer in enumerate(layers):
        y = -0.9 * i
        width = 6.4 / len(layer.packages)
        for j, package in enumerate(layer.packages):
            mods = {m: n for m, n in layer.modules.items() if m == package or m.startswith(package + ".")}
            x = 0.2 + j * width
            ax.add_patch(
                FancyBboxPatch(
                    (x, y - 0.32), width - 0.15, 0.62, boxstyle="round,pad=0.02", fc="#eef3fb", ec="#4a6fa5"
                )
            )
            ax.text(
                x + 0.1, y + 0.08, package.removeprefix("mlgraph."), fontsize=10, weight="bold", va="center"
            )
            ax.text(
                x + 0.1,
                y - 0.16,
                f"{len(mods)} module{'s' * (len(mods) != 1)}, {sum(mods.values()):,} lines, largest {max(mods.values(), default=0):,}",
                fontsize=7.5,
                va="center",
                color="#333333",
            )
    down = {k: v for k, v in arrows.items() if k[1] > k[0]}
    up = {k: v for k, v in arrows.items() if k[1] < k[0]}
    for n, ((a, b), count) in enumerate(sorted({**down, **up}.items())):
        x = 6.9 + 0.22 * (n % 13)
        colour = "#b22222" if (a, b) in up else "#777777"
        ax.annotate(
            "",
            xy=(x, -0.9 * b + 0.3),
            xytext=(x, -0.9 * a - 0.3),
            arrowprops=dict(arrowstyle="->", color=colour, lw=0.8),
        )
        ax.text(x + 0.03, -0.9 * a - 0.42, str(count), fontsize=6, color=colour, ha="left")
    ax.text(
        6.9,
        -height + 0.3,
        f"{sum(down.values())} imports down a layer, {sum(up.values())} up",
        fontsize=8,
        color="#b22222" if up else "#333333",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def _build(app) -> None:
    draw(Path(app.srcdir) / PICTURE)


def setup(app):
    app.connect("builder-inited", _build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
