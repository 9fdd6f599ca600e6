"""Models: one adapter over any scikit-learn-compatible estimator (Pipelines, XGBoost/LightGBM sklearn API,
ONNX graphs wrapped by :mod:`explain_core.intake.onnx_model`).

The adapter turns a feature table (the dataset's raw columns) into one score per row — the positive
class probability, a decision value or a regression prediction — and a 0/1 label by its threshold.
A classifier at its default threshold (0.5 on probabilities, 0 on decision values) is labelled as its
own ``predict`` labels the row, ties included; a custom threshold t labels a row positive when its score
is ≥ t; a regression is labelled 1 when its prediction is at or above the threshold (≥).
Every score passes :meth:`ModelAdapter.scores_of`, which turns a model that raises into a clear
:class:`ModelCallError` and a NaN/inf score into :class:`~explain_core.errors.NonFiniteScores` (never a class).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.exceptions import NotFittedError

from ..cache import Memo, memo_field
from ..errors import ExplainError, IntakeError, ModelCallError, NonFiniteScores, one_line
from ..vocabulary import count_noun, format_number
from .data import Dataset, find_value, show
from .inputs import RenamedInputs, by_position, closest, input_names, sanitised_mapping, unwrap
from .sandbox.model import SandboxedModel, Stage

TIE_BAND = 1e-9  # scores this close to the default threshold are decided by the model's own predict


def model_columns(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``frame[columns]``; an :class:`IntakeError` naming the columns the rows lack."""
    missing = [str(c) for c in columns if c not in frame.columns]
    if missing:
        raise IntakeError(f"The rows given lack the model's {'column' if len(missing) == 1 else 'columns'} "
                          f"{', '.join(missing)}; pass rows with every "
                          "column of the dataset (e.g. data.features.iloc[[i]]).")
    return frame[columns]


def transformed(encoder, frame: pd.DataFrame):
    """``encoder.transform(frame)``; its failure a :class:`ModelCallError` that says what to check."""
    try:
        return encoder.transform(frame)
    except ExplainError:
        raise
    except Exception as exc:  # the preprocessing's own code failed on these rows
        raise ModelCallError(f"The model's preprocessing raised {type(exc).__name__} on "
                             f"{count_noun(len(frame), 'row')}: "
                             f"{one_line(exc)}. Check that the rows hold the dataset's kinds of values (a number in "
                             "each numeric column).") from exc


@dataclass
class ModelAdapter:
    """Batched scores and labels of any sklearn-compatible model over the dataset's feature table.

    ``takes`` is ``"raw"`` (a Pipeline that encodes the raw ``columns`` itself) or ``"encoded"`` (a
    bare estimator fed ``encoder.transform(raw)``, the dataset's encoded matrix). ``positive_class``
    is the model's own label for the dataset's positive class. ``custom_threshold``: the analyst chose
    ``threshold`` (label = score ≥ threshold); otherwise a classifier's label is its own ``predict``
    (see :meth:`scores_of`), and a regression's is prediction ≥ ``threshold``.

    Parameters
    ----------
    estimator : object
        The fitted model: ``predict_proba``, ``decision_function`` or ``predict``.
    columns : list of str
        The raw columns it reads, in order.
    task : str
        ``"classification"`` or ``"regression"``.
    takes : str
        ``"raw"`` or ``"encoded"``.
    encoder : object, optional
        The fitted encoder of an ``"encoded"`` model.
    positive_class : object
        The model's label for the dataset's positive class.
    threshold : float
        The decision threshold on the score.
    score_kind : str
        ``"proba"``, ``"decision"`` or ``"predict"``: what the score is.
    name : str
        The model's name in messages and reports.
    custom_threshold : bool
        Whether the analyst chose ``threshold``.
    """

    estimator: Any
    columns: list[str]
    task: str
    takes: str = "raw"
    encoder: Any = None
    positive_class: Any = 1
    threshold: float = 0.5
    score_kind: str = "proba"
    name: str = "model"
    custom_threshold: bool = False
    splits: Memo = memo_field("encoder/estimator splits (encoded_model) by feature groups", max_entries=8)
    structures: Memo = memo_field("the model read for the exact SEV engines, by feature groups", max_entries=8)

    @property
    def sandboxed(self) -> bool:
        """The model runs in a sandboxed worker process (an upload): each call costs a round trip."""
        return isinstance(unwrap(self.estimator)[1], SandboxedModel)

    def inputs(self, frame: pd.DataFrame):
        """What the estimator is fed for ``frame``: the raw columns, or the encoder's matrix of them.

        Parameters
        ----------
        frame : pandas.DataFrame
            Rows of the dataset's features.

        Returns
        -------
        pandas.DataFrame or numpy.ndarray
            The model's inputs.
        """
        frame = model_columns(frame, self.columns)
        if self.takes == "raw":
            return frame
        names = getattr(self.estimator, "feature_names_in_", None)
        encoded = transformed(self.encoder, frame)
        return encoded if names is None else pd.DataFrame(encoded, columns=names)

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """One float per row: P(positive), the decision value for the positive class, or the prediction.

        Parameters
        ----------
        frame
            As for :meth:`inputs`.

        Returns
        -------
        numpy.ndarray
            The scores.
        """
        return self.scores_of(self.estimator, self.inputs(frame))

    def scores_of(self, estimator, X) -> np.ndarray:
        """:meth:`score` of ``estimator`` (this model, or its final step on encoded rows ``X``); a model error
        becomes :class:`ModelCallError`, a NaN/inf score :class:`~explain_core.errors.NonFiniteScores`.

        Parameters
        ----------
        estimator : object
            This model, or its final step.
        X : pandas.DataFrame or numpy.ndarray
            Its inputs.

        Returns
        -------
        numpy.ndarray
            One score per row.

        Raises
        ------
        ModelCallError
            When the model raises.
        NonFiniteScores
            When a score is NaN or ±inf.
        """
        try:
            with sklearn.config_context(assume_finite=True):  # scores are checked below; inputs may hold NaN
                scores = self._raw_scores(estimator, X)
        except ExplainError:
            raise
        except Exception as exc:  # the model's own code failed on these rows
            kind = getattr(exc, "remote_type", type(exc).__name__)  # the class of an error raised in a sandbox
            raise ModelCallError(f"The model raised {kind} while scoring {count_noun(len(X), 'row')}: "
                                 f"{one_line(exc)}. Check that it was trained on these columns and their types "
                                 "(a Pipeline that includes its preprocessing is safest).") from exc
        bad = ~np.isfinite(scores)
        if bad.any():
            raise NonFiniteScores(int(bad.sum()), len(scores))
        return self._settle_ties(estimator, X, scores)

    def _settle_ties(self, estimator, X, scores: np.ndarray) -> np.ndarray:
        """At the default threshold, a score within :data:`TIE_BAND` of it is decided by the model's own
        ``predict`` (sklearn takes the arg-max of the probabilities, e.g. 1 at P = [0.49999999999999994, 0.5],
        and ``decision > 0`` for classes_[1]): such a score is moved to the nearest float on the side of
        that decision (a change of at most TIE_BAND), so :meth:`labels_of` equals ``predict`` on every row of a
        binary classifier whose ``predict`` follows its scores (sklearn's, XGBoost's, LightGBM's; not an SVC's
        Platt-scaled probabilities; a multiclass model explained one class against the rest is labelled by
        P(class) > 0.5)."""
        if self.task != "classification" or self.custom_threshold or self.score_kind == "predict":
            return scores
        near = np.flatnonzero(np.abs(scores - self.threshold) <= TIE_BAND)
        predict = getattr(estimator, "predict", None)  # a bare scoring function has no decision of its own
        if len(near) == 0 or predict is None:
            return scores
        rows = X.iloc[near] if isinstance(X, pd.DataFrame) else X[near]
        try:
            positive = np.asarray(predict(rows)).ravel() == self.positive_class
        except Exception as exc:
            kind = getattr(exc, "remote_type", type(exc).__name__)
            raise ModelCallError(f"The model raised {kind} in predict on {count_noun(len(near), 'row')} at its "
                                 f"decision threshold: {one_line(exc)}.") from exc
        scores = scores.copy()
        above = np.nextafter(self.threshold, np.inf)
        scores[near] = np.where(positive, np.maximum(scores[near], above), np.minimum(scores[near], self.threshold))
        return scores

    def _raw_scores(self, estimator, X) -> np.ndarray:
        if self.score_kind == "proba":
            proba = np.asarray(estimator.predict_proba(X))
            _check_shape(proba, (len(X), len(self.estimator.classes_)), "probabilities")
            return proba[:, self._positive_index()].astype(float)
        if self.score_kind == "decision":  # sklearn: a decision value > 0 means classes_[1]
            decision = np.asarray(estimator.decision_function(X), dtype=float)
            _check_shape(decision.reshape(len(decision), -1), (len(X), 1), "decision values")
            decision = decision.ravel()
            return decision if self._positive_index() == 1 else -decision
        pred = np.asarray(estimator.predict(X))
        _check_shape(pred.reshape(len(pred), -1), (len(X), 1), "predictions")
        pred = pred.ravel()
        if self.task == "classification":
            return (pred == self.positive_class).astype(float)
        return pred.astype(float)

    def introspect(self, function, *args):
        """``function(estimator, *args)``: plain data read off the fitted model (its trees, its coefficients).
        ``function`` is a module-level function of this package that returns only JSON types and numpy arrays,
        and its answer is validated by the caller: for an uploaded model it runs in the model's sandboxed worker
        process, on the real model wrapped as here (:func:`~explain_core.intake.inputs.unwrap`).

        Parameters
        ----------
        function : callable
            The reader.
        *args
            Its further arguments.

        Returns
        -------
        object
            What ``function`` returns.
        """
        layers, core = unwrap(self.estimator)
        if isinstance(core, SandboxedModel):
            return core.introspect(function, *args, layers=layers)
        return function(self.estimator, *args)

    def label(self, frame: pd.DataFrame) -> np.ndarray:
        """1 where the model predicts the positive class, else 0 (see :meth:`labels_of`).

        Parameters
        ----------
        frame
            As for :meth:`inputs`.

        Returns
        -------
        numpy.ndarray
            0 / 1 per row.
        """
        return self.labels_of(self.score(frame))

    def labels_of(self, scores: np.ndarray) -> np.ndarray:
        """The one labelling rule of every engine: a regression's prediction ≥ its threshold (the default median or
        a chosen one); a classifier's score ≥ a custom threshold, else score > the default one (the model's own
        ``predict`` for scores from :meth:`scores_of`, ties settled there).

        Parameters
        ----------
        scores : numpy.ndarray
            Scores from :meth:`score`.

        Returns
        -------
        numpy.ndarray
            0 / 1 (int8) per score.
        """
        scores = np.asarray(scores)
        at_or_above = self.custom_threshold or self.task != "classification"
        return (scores >= self.threshold if at_or_above else scores > self.threshold).astype(np.int8)

    @property
    def rule(self) -> str:
        """The labelling rule in words."""
        if self.custom_threshold:
            return f"score ≥ {format_number(self.threshold)} (custom threshold)"
        if self.task == "classification":
            return "the model's own prediction"
        return f"prediction at or above {format_number(self.threshold)}"

    def _positive_index(self) -> int:
        return list(self.estimator.classes_).index(self.positive_class)


def read_model(estimator, function, *args):
    """``function(estimator, *args)`` where ``estimator`` lives: in its sandboxed worker for an uploaded model (or
    a stage of one), here otherwise (see :meth:`ModelAdapter.introspect`)."""
    if isinstance(estimator, (SandboxedModel, Stage)):
        return estimator.introspect(function, *args)
    return function(estimator, *args)


def _check_shape(values: np.ndarray, wanted: tuple[int, int], what: str) -> None:
    if values.shape != wanted:
        raise ModelCallError(f"The model returned {what} of shape {values.shape} for "
                             f"{count_noun(wanted[0], 'row')}, where "
                             f"{wanted} was expected (one row per input row, one column per class); check that it "
                             "is a fitted classifier or regressor for this target.")


def wrap_model(estimator, dataset: Dataset, *, encoder=None, threshold: float | None = None,
               score_kind: str | None = None, positive_class=None, name: str = "model",
               by_order: bool = False) -> ModelAdapter:
    """Wrap an estimator or Pipeline for ``dataset``, checking its inputs and classes.

    A model that records the dataset's column names (``feature_names_in_``; names that differ only by an
    exporter's sanitisation match too) takes raw columns; a bare estimator takes the encoded matrix of the
    fitted ``encoder`` it was trained on; a model that records no names takes the dataset's columns in their
    order when ``by_order`` confirms it. ``positive_class`` is the model's label for the dataset's positive
    class when the model was trained on a recoded target (e.g. ``1`` for a 0/1 target); by default the same.
    A classifier's ``threshold`` other than its default (0.5 on probabilities, 0 on decision values) is custom:
    a row is positive when its score is ≥ it; at the default the label is the model's own ``predict``. A
    regression's row is positive when its prediction is ≥ ``threshold`` (default: the target's median).

    Parameters
    ----------
    estimator : object
        A fitted estimator, Pipeline or sandboxed model.
    dataset : Dataset
        The data it explains.
    encoder : object, optional
        The fitted encoder a bare estimator was trained behind.
    threshold : float, optional
        The decision threshold on the score.
    score_kind : str, optional
        ``"proba"``, ``"decision"`` or ``"predict"`` (default: what the model offers).
    positive_class : object, optional
        The model's label for the dataset's positive class.
    name : str
        The model's name in messages.
    by_order : bool
        Confirms that a model without column names takes the dataset's columns in order.

    Returns
    -------
    ModelAdapter
        The wrapped model.

    Raises
    ------
    IntakeError
        When the model's inputs, classes, task or threshold do not fit the dataset; the message names the fix.
    """
    estimator = match_inputs(estimator, dataset, encoder, by_order)
    takes, columns = _input_columns(estimator, dataset, encoder)
    kind = score_kind or _default_score_kind(estimator, dataset.task)
    positive = None
    if dataset.task == "classification":
        wanted = dataset.positive_class if positive_class is None else positive_class
        positive = _model_class(estimator, wanted, kind)
    custom = dataset.task == "classification" and threshold is not None and float(threshold) != default_threshold(kind)
    if threshold is None:
        threshold = float(np.median(dataset.y)) if dataset.task == "regression" else default_threshold(kind)
    if not np.isfinite(threshold):
        raise IntakeError(f"The decision threshold must be a finite number, not {threshold}.")
    return ModelAdapter(estimator, columns, dataset.task, takes, encoder if takes == "encoded" else None,
                        positive, float(threshold), kind, name, custom)


def default_threshold(score_kind: str) -> float:
    """A classifier's default threshold: 0 on decision values, 0.5 on probabilities (and 0/1 predictions)."""
    return 0.0 if score_kind == "decision" else 0.5


def _default_score_kind(estimator, task: str) -> str:
    if task == "regression":
        return "predict"
    if hasattr(estimator, "predict_proba"):
        return "proba"
    binary = len(getattr(estimator, "classes_", ())) == 2
    return "decision" if binary and hasattr(estimator, "decision_function") else "predict"


def _model_class(estimator, positive, kind: str):
    """The model's class label equal to ``positive`` (text and numbers compared as text)."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:
        if kind == "predict":
            return positive
        raise IntakeError("The model does not list its classes (no classes_), so its scores cannot be matched "
                          "to the positive class; upload a fitted scikit-learn classifier or Pipeline.")
    match = find_value(positive, list(classes))
    if match is None:
        raise IntakeError(f"The model's classes [{show(classes)}] do not include the positive class "
                          f"{show([positive])}; the model was trained on a differently coded target — recode "
                          "the target column to the model's classes, or name the model's label for the positive class.")
    return match


def match_inputs(estimator, dataset: Dataset, encoder=None, by_order: bool = False):
    """``estimator``, or it wrapped so the dataset's columns reach it: renamed (sanitised names) or in order."""
    if encoder is not None:
        return estimator
    names = input_names(estimator)
    if names is None:
        return by_position(estimator, dataset.features) if by_order else estimator
    named = getattr(estimator, "feature_names_in_", None) is not None
    if named and set(names) <= set(map(str, dataset.columns)):
        return estimator
    mapping = sanitised_mapping(names, [str(c) for c in dataset.columns])
    return estimator if mapping is None else RenamedInputs(estimator, mapping)


def _input_columns(estimator, dataset: Dataset, encoder) -> tuple[str, list[str]]:
    """``("encoded", raw columns)`` or ``("raw", the model's columns in its order)``, or an IntakeError."""
    names = getattr(estimator, "feature_names_in_", None)
    names = None if names is None else list(names)
    if encoder is not None:
        try:
            encoded = [str(n) for n in encoder.get_feature_names_out()]
        except NotFittedError as exc:
            raise IntakeError("The encoder is not fitted; pass the fitted encoder the model was trained on.") from exc
        if names is None or list(map(str, names)) == encoded:
            wanted = getattr(estimator, "n_features_in_", None)
            if wanted is not None and wanted != len(encoded):
                raise IntakeError(f"The model expects {wanted} input columns but the dataset's encoding has "
                                  f"{len(encoded)}; the model was trained on a different encoding — upload a "
                                  "Pipeline that includes its preprocessing.")
            return "encoded", dataset.columns
    if names is None:
        n = getattr(estimator, "n_features_in_", None)
        raise IntakeError(f"The model does not record its input column names (it expects {n} unnamed inputs); "
                          f"confirm that its inputs are the dataset's {len(dataset.columns)} feature columns in "
                          "their order (by_order=True; on the Data & model page, the box under the model file), "
                          "upload a Pipeline fitted on a DataFrame with the dataset's columns, or give the encoder "
                          "it was trained on.")
    missing = [str(c) for c in names if c not in dataset.columns]
    if missing:
        hints = [f"{c} → {' or '.join(near)}" for c in missing[:10] if (near := closest(c, dataset.columns))]
        hint = f" (closest in the dataset: {'; '.join(hints)})" if hints else ""
        raise IntakeError(f"The model needs columns the dataset lacks: {', '.join(missing)}{hint}; upload the dataset "
                          "the model was trained on, or rename those columns to the model's names.")
    extra = [str(c) for c in dataset.columns if c not in names]
    if extra:
        raise IntakeError(f"The dataset has feature columns the model does not use: {', '.join(extra)}; "
                          "drop them from the file so every feature can be explained.")
    return "raw", names
