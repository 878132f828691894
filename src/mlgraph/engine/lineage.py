"""What a run records of where its numbers come from: the dataset it read, as an MLflow dataset
input (:func:`dataset_fields`), and, with ``tracking.log_model=true``, a model fitted on one
trial's training part (:func:`log_model`)."""

from __future__ import annotations

import importlib.metadata
import json

import numpy as np
import scipy.sparse as sp
from omegaconf import DictConfig
from sklearn.base import clone

from mlgraph.engine.jobs import JobInfo
from mlgraph.engine.plan import Plan
from mlgraph.tracking.process import tracked
from mlgraph.tracking.store import log_sklearn_model

# MLflow stores a dataset digest in at most 36 characters; the full SHA-256 is in the dataset's
# profile and in the run's tag ``dataset_sha256``.
DIGEST_LENGTH = 16


def protocol_name(cfg: DictConfig, job: JobInfo) -> str:
    """The protocol option a job ran (``ssl``, ``halves``, ``cv10``, ...), else its function."""
    return job.choices.get("protocol") or str(cfg.protocol.get("_target_", "protocol")).rsplit(".", 1)[-1]


def dataset_fields(data, context: str) -> dict[str, str]:
    """The run's dataset as the fields of an MLflow dataset input
    (:func:`mlgraph.tracking.store.dataset_input`): name, digest = the SHA-256 of the file as stored
    (its first :data:`DIGEST_LENGTH` hex digits; of a published train/test split, the first half
    of each file's, joined by ``-``), source = that file, the shapes of features and labels as
    schema and profile (with the full SHA-256), and the protocol as context."""
    X, Y = data.X, data.Y
    n_labels = getattr(data, "n_labels", Y.shape[1])
    spec = lambda dtype, width: json.dumps(  # noqa: E731
        [{"type": "tensor", "tensor-spec": {"dtype": str(dtype), "shape": [-1, width]}}]
    )
    parts = data.sha256.split(";")  # a published split: the training file's, then the test file's
    return dict(
        name=data.name,
        digest="-".join(p[: DIGEST_LENGTH // len(parts)] for p in parts),
        source=json.dumps({"uri": str(data.source)}),
        schema=json.dumps(
            {
                "mlflow_tensorspec": {
                    "features": spec(X.dtype, X.shape[1]),
                    "targets": spec(Y.dtype, Y.shape[1]),
                }
            }
        ),
        profile=json.dumps(
            {
                "features_shape": [int(X.shape[0]), int(X.shape[1])],
                "targets_shape": [int(Y.shape[0]), int(n_labels)],
                "sha256": data.sha256,
            }
        ),
        context=context,
    )


def model_trial(trials: list) -> object:
    """The trial whose training part the logged model is fitted on: with ``protocol=fixed`` the
    one published split; otherwise the first repetition at the highest labelling rate (the
    first fold under cross-validation, the first split under halves), so that the model has
    the most labels any trial gave it."""
    top = max(t.rate for t in trials)
    return min((t for t in trials if t.rate == top), key=lambda t: t.repetition)


def log_model(plan: Plan) -> None:
    """``tracking.log_model=true``: refit the estimator on :func:`model_trial`'s training part
    (its unlabelled rows marked −1; a transductive method on those rows alone, without the test
    rows the trial joined to its graph) and log it in MLflow's scikit-learn flavour as
    ``model``, with a signature and an input example of five training rows. No test row reaches
    the model, the example or the signature.

    The model is serialised by skops (MLflow's default format), which rebuilds only the types it
    is told to trust: mlgraph's own estimators and scipy's sparse matrices (see
    :func:`trusted_types`), never arbitrary pickled code. Kernel and neighbour methods keep their
    training rows inside the model, so a logged model carries training data.
    """
    trial = model_trial(plan.trials)
    X, Y = plan.data.X, plan.data.Y
    X_train = X[trial.train]
    model = clone(plan.estimator).fit(X_train, trial.targets(Y))
    example = X_train[:5]
    example = example.toarray() if sp.issparse(example) else np.asarray(example)
    tracked(
        log_sklearn_model,
        model,
        example,
        model.predict(example),
        trusted_types(model),
        [f"{p}=={importlib.metadata.version(p)}" for p in MODEL_REQUIREMENTS],
        {
            "model_trial": f"rate={trial.rate:g} repetition={trial.repetition}",
            "model_training_rows": str(len(trial.train)),
        },
    )


# What a logged model needs to load (mlgraph itself, since the estimators are its classes).
MODEL_REQUIREMENTS = ("mlgraph", "numpy", "scipy", "scikit-learn", "skops")
TRUSTED_MODULES = ("mlgraph.", "scipy.sparse.")


def trusted_types(model) -> list[str]:
    """The types skops does not trust by default that ``model`` holds, when all of them are
    mlgraph's estimators or scipy's sparse matrices; any other type is refused by name."""
    import skops.io

    found = skops.io.get_untrusted_types(data=skops.io.dumps(model))
    foreign = [t for t in found if not t.startswith(TRUSTED_MODULES)]
    if foreign:
        raise ValueError(
            f"the model holds types outside mlgraph and scipy.sparse ({', '.join(foreign)}), which "
            "a logged model does not trust; log it yourself with mlflow.sklearn.log_model"
        )
    return found
