"""scikit-multilearn-ng's classifiers behind mlgraph's estimator interface: each wrapper's
outputs against the library called directly on the same scaled features, the unlabelled rows,
scikit-learn conventions, and the paragraph without the extra."""

import pickle
import sys

import numpy as np
import pytest
from sklearn.base import clone

from mlgraph.config.extras import MissingExtra
from mlgraph.data import load_dataset
from mlgraph.methods.skmultilearn import SkmlBRkNN, SkmlMLARAM, SkmlMLkNN, SkmlMLTSVM, SkmlSMiLE

pytestmark = pytest.mark.filterwarnings("ignore:numpy.core:DeprecationWarning")  # the library's own
skml = pytest.importorskip("skmultilearn", reason="the optional extra skmultilearn (scikit-multilearn-ng)")
from skmultilearn.adapt import MLARAM, MLTSVM, BRkNNaClassifier, BRkNNbClassifier, MLkNN  # noqa: E402
from skmultilearn.missing import SMiLE  # noqa: E402

ALL = [SkmlMLkNN(), SkmlBRkNN(), SkmlMLARAM(), SkmlMLTSVM(max_iteration=50), SkmlSMiLE(random_state=0)]


@pytest.fixture(scope="module")
def emotions():
    data = load_dataset("emotions")
    X = np.asarray(data.X.toarray() if hasattr(data.X, "toarray") else data.X, dtype=float)
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[:300], order[300:420]
    return X[train], data.Y[train].astype(np.int64), X[test], data.Y[test]


def _zscore(Xtr, Xte):
    keep = Xtr.max(axis=0) > Xtr.min(axis=0)
    mean, std = Xtr[:, keep].mean(axis=0), Xtr[:, keep].std(axis=0)
    return (Xtr[:, keep] - mean) / std, (Xte[:, keep] - mean) / std


def test_mlknn_is_the_librarys_posterior_and_decision(emotions):
    Xtr, Ytr, Xte, _ = emotions
    ours = SkmlMLkNN(k=7).fit(Xtr, Ytr)
    A, B = _zscore(Xtr, Xte)
    theirs = MLkNN(k=7).fit(A, Ytr)
    np.testing.assert_allclose(ours.decision_function(Xte), theirs.predict_proba(B).toarray(), rtol=1e-12)
    np.testing.assert_array_equal(ours.predict(Xte), theirs.predict(B).toarray())


@pytest.mark.parametrize(("variant", "library"), [("a", BRkNNaClassifier), ("b", BRkNNbClassifier)])
def test_brknn_scores_are_the_neighbours_label_shares(emotions, variant, library):
    Xtr, Ytr, Xte, _ = emotions
    ours = SkmlBRkNN(k=5, variant=variant).fit(Xtr, Ytr)
    A, B = _zscore(Xtr, Xte)
    theirs = library(k=5).fit(A, Ytr)
    np.testing.assert_array_equal(ours.predict(Xte), theirs.predict(B).toarray())
    # independent: the share of the 5 nearest training rows (Euclidean) that have each label
    d = ((B[:, None, :] - A[None, :, :]) ** 2).sum(axis=2)
    nearest = np.argsort(d, axis=1, kind="stable")[:, :5]
    np.testing.assert_allclose(ours.decision_function(Xte), Ytr[nearest].mean(axis=1))


def test_mlaram_sees_training_min_max_scaled_features_and_predicts_row_by_row_alike(emotions):
    Xtr, Ytr, Xte, _ = emotions
    ours = SkmlMLARAM().fit(Xtr, Ytr)
    keep = Xtr.max(axis=0) > Xtr.min(axis=0)
    low, span = Xtr[:, keep].min(axis=0), np.ptp(Xtr[:, keep], axis=0)
    theirs = MLARAM().fit((Xtr[:, keep] - low) / span, Ytr.copy())  # the library adds to Y's rows in place
    scaled = np.clip((Xte[:, keep] - low) / span, 0, 1)
    np.testing.assert_allclose(ours.decision_function(Xte), theirs.predict_proba(scaled))
    # a test row's prediction does not depend on the other rows predicted with it
    np.testing.assert_array_equal(ours.predict(Xte[:1]), ours.predict(Xte)[:1])


def test_mltsvm_scores_are_positive_exactly_where_the_library_predicts(emotions):
    Xtr, Ytr, Xte, _ = emotions
    ours = SkmlMLTSVM(max_iteration=50).fit(Xtr, Ytr)
    A, B = _zscore(Xtr, Xte)
    theirs = MLTSVM(c_k=0.125, max_iteration=50)
    theirs.fit(A, Ytr)
    np.testing.assert_array_equal(ours.predict(Xte), theirs.predict(B))
    np.testing.assert_array_equal(ours.decision_function(Xte) > 0, theirs.predict(B) == 1)


def test_smile_takes_unlabelled_rows_as_rows_without_labels(emotions):
    Xtr, Ytr, Xte, _ = emotions
    Ym = Ytr.copy()
    Ym[::3] = -1
    ours = SkmlSMiLE(k=4, random_state=3).fit(Xtr, Ym)
    A, B = _zscore(Xtr, Xte)
    zeros = np.where(Ym == -1, 0, Ym)
    np.random.seed(3)
    theirs = SMiLE(k=4).fit(A, zeros)
    scores = B @ theirs.P + theirs.b.T
    np.testing.assert_allclose(ours.decision_function(Xte), scores, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ours.predict(Xte), (scores > 0.5).astype(np.int8))


def test_smile_restores_numpys_global_generator(emotions):
    Xtr, Ytr, _, _ = emotions
    np.random.seed(11)
    expected = np.random.random()
    np.random.seed(11)
    SkmlSMiLE(random_state=5).fit(Xtr, Ytr)
    assert np.random.random() == expected


@pytest.mark.parametrize("est", [SkmlMLkNN(), SkmlBRkNN(), SkmlMLARAM(), SkmlMLTSVM(max_iteration=50)])
def test_supervised_wrappers_drop_unlabelled_rows(emotions, est):
    Xtr, Ytr, Xte, _ = emotions
    Ym = Ytr.copy()
    Ym[::4] = -1
    labelled = ~(Ym == -1).all(axis=1)
    with_rows = clone(est).fit(Xtr, Ym)
    without = clone(est).fit(Xtr[labelled], Ytr[labelled])
    np.testing.assert_array_equal(with_rows.decision_function(Xte), without.decision_function(Xte))


@pytest.mark.parametrize("est", ALL, ids=lambda e: type(e).__name__)
def test_scikit_learn_conventions(emotions, est):
    Xtr, Ytr, Xte, Yte = emotions
    assert clone(est).get_params() == est.get_params()
    fitted = clone(est).fit(Xtr, Ytr)
    assert fitted.n_features_in_ == Xtr.shape[1] and len(fitted.classes_) == Ytr.shape[1]
    predicted, scores = fitted.predict(Xte), fitted.decision_function(Xte)
    assert predicted.shape == scores.shape == Yte.shape and predicted.dtype == np.int8
    assert set(np.unique(predicted)) <= {0, 1} and np.isfinite(scores).all()
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.decision_function(Xte), scores)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(Xte[:, :-1])


def test_bad_parameters_name_the_parameter(emotions):
    Xtr, Ytr, _, _ = emotions
    with pytest.raises(ValueError, match="scale='robust' must be zscore or minmax or none"):
        SkmlMLkNN(scale="robust").fit(Xtr, Ytr)
    with pytest.raises(ValueError, match="c_k=0 must be a positive number"):
        SkmlMLTSVM(c_k=0).fit(Xtr, Ytr)


def test_without_the_extra_fit_is_one_paragraph_naming_pip(emotions, monkeypatch):
    Xtr, Ytr, _, _ = emotions
    est = SkmlMLkNN()  # construction needs nothing
    monkeypatch.setitem(sys.modules, "skmultilearn", None)
    with pytest.raises(MissingExtra, match=r"pip install 'mlgraph\[skmultilearn\]'"):
        est.fit(Xtr, Ytr)
