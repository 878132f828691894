"""The toy experiment of paper 002 (ML², Sec. 4.1 and Fig. 3): is the label manifold recovered?

The paper's toy data are 3-dimensional: the third coordinate is the standard bivariate normal
density of the first two, x3 = exp(−(x1² + x2²)/2) / (2π) (mean 0, unit variance per
dimension). The numerical labels are μ = Mᵀx with the printed matrix (Eq. 13)

    M = [[0.48, 0.21], [0.87, −0.76], [−0.12, 0.3]],

and only their signs, the logical labels, are given to ML². :func:`toy_experiment` runs the
label-manifold step of ML² (:func:`~mlgraph.methods.label_manifold.lle_weights` with K = q + 1
= 3, then :func:`~mlgraph.methods.label_manifold.label_manifold` with λ = 1) and compares the
reconstructed numerical labels with the true ones; :func:`plot_toy` draws Fig. 3.

Assumptions (the paper does not give them): (x1, x2) lie on a regular ``n_side × n_side`` grid
over [−extent, extent]² with extent = 3 (a mesh of the Gaussian surface, 625 points), or, with
``layout="uniform"``, are drawn uniformly from that square with ``random_state``; the features are
used raw (not standardised). Reconstructed labels are compared with the true ones by the
Pearson correlation per label (they are equal only up to scale: Eq. 4 fixes the scale by λ).
With the defaults both correlations exceed 0.99. On uniformly scattered points K = 3 neighbours
often extrapolate (x_i outside the triangle of its neighbours), Eq. 3 becomes nearly degenerate
and the correlation drops; K = 5 or more restores it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mlgraph.methods.label_manifold import label_manifold, lle_weights

__all__ = ["TOY_M", "ToyResult", "plot_toy", "toy_data", "toy_experiment"]

TOY_M = np.array([[0.48, 0.21], [0.87, -0.76], [-0.12, 0.3]])  # Eq. 13
LAYOUTS = ("grid", "uniform")


@dataclass(frozen=True, eq=False)
class ToyResult:
    """Toy features ``X`` (n × 3), true numerical labels ``mu_true`` (n × 2), logical labels ``Y``
    (0/1), reconstructed numerical labels ``mu`` and the Pearson ``correlation`` per label."""

    X: np.ndarray
    mu_true: np.ndarray
    Y: np.ndarray
    mu: np.ndarray
    correlation: np.ndarray


def toy_data(
    n_side: int = 25, extent: float = 3.0, layout: str = "grid", random_state: int | None = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, μ = Mᵀx, Y = [μ > 0]) of the paper's toy example, n_side² points."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if isinstance(n_side, bool) or not isinstance(n_side, (int, np.integer)) or n_side < 3:
        raise ValueError(f"n_side must be an integer >= 3, got {n_side!r}")
    if not (np.isfinite(extent) and extent > 0):
        raise ValueError(f"extent must be a positive number, got {extent!r}")
    if layout == "grid":
        axis = np.linspace(-extent, extent, n_side)
        x12 = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)
    else:
        x12 = np.random.default_rng(random_state).uniform(-extent, extent, size=(n_side**2, 2))
    x3 = np.exp(-0.5 * (x12**2).sum(axis=1)) / (2.0 * np.pi)
    X = np.column_stack([x12, x3])
    mu = X @ TOY_M
    return X, mu, (mu > 0).astype(np.int8)


def toy_experiment(
    n_side: int = 25,
    extent: float = 3.0,
    layout: str = "grid",
    n_neighbors: int | None = None,
    lam: float = 1.0,
    reg: float = 1e-3,
    random_state: int | None = 0,
) -> ToyResult:
    """Reconstruct the toy's numerical labels from the features and the label signs only."""
    X, mu_true, Y = toy_data(n_side, extent, layout, random_state)
    k = Y.shape[1] + 1 if n_neighbors is None else n_neighbors
    mu = label_manifold(lle_weights(X, k, reg=reg), Y, lam=lam)
    corr = np.array([np.corrcoef(mu[:, j], mu_true[:, j])[0, 1] for j in range(Y.shape[1])])
    return ToyResult(X=X, mu_true=mu_true, Y=Y, mu=mu, correlation=corr)


def plot_toy(result: ToyResult, path=None) -> Figure:
    """Fig. 3: (a) the toy points in feature space, (b) the true and (c) the reconstructed
    numerical labels, coloured by the logical label vector. Saved to ``path`` when given (PNG,
    SVG and PDF, see :func:`mlgraph.evaluation.figures.save_figure`)."""
    fig = Figure(figsize=(13.5, 4.2))
    FigureCanvasAgg(fig)
    colour = result.Y @ np.array([1, 2])  # four sign patterns → four colours
    cmap, kw = "viridis", {"s": 8, "vmin": 0, "vmax": 3}
    ax = fig.add_subplot(1, 3, 1, projection="3d")
    ax.scatter(*result.X.T, c=colour, cmap=cmap, **kw)
    ax.set(title="(a) feature space", xlabel="$x_1$", ylabel="$x_2$", zlabel="$x_3$")
    for i, (mu, title) in enumerate(
        [(result.mu_true, "(b) true numerical labels"), (result.mu, "(c) reconstructed numerical labels")],
        start=2,
    ):
        ax = fig.add_subplot(1, 3, i)
        ax.scatter(mu[:, 0], mu[:, 1], c=colour, cmap=cmap, **kw)
        ax.axhline(0, color="grey", lw=0.5)
        ax.axvline(0, color="grey", lw=0.5)
        ax.set(title=title, xlabel=r"$\mu_1$", ylabel=r"$\mu_2$")
    r = result.correlation
    fig.suptitle(f"ML² toy experiment: Pearson correlation per label {r[0]:.3f}, {r[1]:.3f}")
    fig.tight_layout()
    if path is not None:
        from mlgraph.evaluation.figures import save_figure

        save_figure(fig, path)
    return fig


def run_toy(cfg) -> None:
    """Run the toy experiment and track it as one MLflow run (experiment ``toy``) with the
    per-label correlations and Fig. 3 as an artifact, in the store of ``cfg.tracking``."""
    import logging
    import tempfile
    from pathlib import Path

    import mlflow

    from mlgraph.tracking.store import log_batch, provenance_tags, setup_experiment

    experiment_id = setup_experiment(cfg.tracking.uri, "toy", cfg.tracking.get("artifact_location"))
    result = toy_experiment()
    with (
        mlflow.start_run(experiment_id=experiment_id, run_name="ml2-toy") as run,
        tempfile.TemporaryDirectory() as tmp,
    ):
        log_batch(
            run.info.run_id,
            tags={**provenance_tags(), "method": "ml2", "dataset": "toy"},
            metrics=[(f"correlation_label{j + 1}", r, 0) for j, r in enumerate(result.correlation)],
        )
        plot_toy(result, Path(tmp) / "toy_fig3.png")
        mlflow.log_artifacts(tmp)
    logging.getLogger(__name__).info(
        "ML² toy: correlation per label %s (MLflow run %s)", np.round(result.correlation, 4), run.info.run_id
    )


def main(argv: list[str] | None = None) -> None:
    """``mlgraph toy [key=value ...]`` (or ``python -m mlgraph.engine.toy``): :func:`run_toy` as a Hydra
    job on the project's config (``tracking=...`` overrides work as for ``mlgraph run``)."""
    import sys

    from mlgraph.config.app import hydra_main

    hydra_main(run_toy, sys.argv[1:] if argv is None else argv, "toy")


if __name__ == "__main__":
    main()
