"""
Model selection with scikit-learn
=================================

Every estimator in :mod:`mlgraph.methods` is a scikit-learn classifier: ``GridSearchCV``,
``cross_validate`` and ``Pipeline`` work with it. The semi-supervised methods take ``-1`` rows
in ``Y`` as unlabelled points, which cross-validation also puts into the test folds; wrap the
scorer in :func:`mlgraph.methods.labelled_scorer` to score the labelled rows only.
"""

# %%
# Data: emotions, with 70 % of the training rows unlabelled
# ---------------------------------------------------------
import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split

from mlgraph.data import load_dataset

data = load_dataset("emotions")  # shipped with mlgraph
X_train, X_test, Y_train, Y_test = train_test_split(data.X, data.Y, test_size=1 / 3, random_state=0)
rng = np.random.default_rng(0)
Y_ssl = Y_train.copy()
Y_ssl[rng.random(len(Y_ssl)) < 0.7] = -1  # unlabelled rows
print(data.X.shape, data.Y.shape, "labelled training rows:", int((Y_ssl[:, 0] >= 0).sum()))

# %%
# Tune ML-MRRW's manifold weight γ_I by 3-fold grid search
# --------------------------------------------------------
# ``gamma_I = 0`` switches the manifold term off (kernel ridge regression on the labelled
# points), a useful row in any comparison.
from mlgraph.methods import MLMRRW, labelled_scorer

search = GridSearchCV(
    MLMRRW(),
    {"gamma_I": [0.0, 0.1, 1.0, 10.0]},
    cv=3,
    scoring=labelled_scorer("average_precision"),
)
search.fit(X_train, Y_ssl)
print("best:", search.best_params_, round(search.best_score_, 4))

# %%
# Scores of the refitted best model on the held-out rows:
from mlgraph.evaluation import metrics

scores = search.decision_function(X_test)
print("average precision", round(metrics.average_precision(Y_test, scores), 4))
print("micro-F1", round(metrics.micro_f1(Y_test, search.predict(X_test)), 4))

# %%
# A pipeline: feature selection, then a classifier
# ------------------------------------------------
# Paper 004's selectors are transformers; here MLFS keeps a fraction of the features before
# binary relevance with 3-NN, and the grid searches that fraction (supervised: full labels).
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline

from mlgraph.methods import BinaryRelevance
from mlgraph.methods.selection import MLFS

pipe = Pipeline([("select", MLFS()), ("clf", BinaryRelevance(KNeighborsClassifier(3)))])
search = GridSearchCV(pipe, {"select__fraction": [0.2, 0.5, 1.0]}, cv=3, scoring="f1_micro")
search.fit(X_train, Y_train)
print("best:", search.best_params_, round(search.best_score_, 4))
