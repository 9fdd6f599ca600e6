"""The families a model can be trained in for sparse explanations (SEV paper App. B-C): each one's score on encoded
rows as a differentiable function of its trainable weights, its defaults, and the estimator it exports.

- logistic regression (``LogisticRegression``): the coefficients and the intercept train;
- MLP (``MLPClassifier``, e.g. the demo's two hidden layers of 128): every weight and bias trains;
- gradient boosting (``GradientBoostingClassifier``): every tree stays as it is and one weight per tree trains
  (App. C). Each tree's output on every training row and on every one-step vertex is computed once, before
  training, as the tree's leaf index (the vertices never change); an epoch only gathers leaf values.

The defaults and why each family has them: :mod:`explain_core.sparse.training`.
"""
from __future__ import annotations

import copy

import numpy as np
import torch
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from ..errors import IntakeError
from ..intake.sandbox.model import Stage
from .losses import group_moments, one_step_vertices

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "logistic": torch.sigmoid, "identity": lambda h: h}
APP_B = {"learning_rate": 0.1, "warmup_epochs": 70, "sev_epochs": 30}


class Family:
    """One family's trainable weights on the encoded training rows, the reference and the one-step vertices."""

    kind: str
    schedule = APP_B
    strengths = {"vol_opt": 0.01, "all_opt_restricted": 3.0}  # λ per objective; 1 otherwise

    @classmethod
    def defaults(cls, estimator, objective: str) -> dict:
        """The knobs a run leaves at None, for this family and objective."""
        return {**cls.schedule, "strength": cls.strengths.get(objective, 1.0)}

    def __init__(self, estimator, X: np.ndarray, reference: np.ndarray, groups: np.ndarray, sign: float,
                 side: str | None, device: torch.device, threshold: float):
        self.estimator, self.sign, self.device, self.side = estimator, sign, device, side
        self.threshold = threshold  # T of eqs. 6-8
        self.X = torch.as_tensor(X, dtype=torch.float32, device=device)
        self.reference = torch.as_tensor(reference, dtype=torch.float32, device=device)
        self.groups = torch.as_tensor(groups, dtype=torch.float32, device=device)

    def logits(self, Z: torch.Tensor) -> torch.Tensor:  # positive-class logit of encoded rows Z (..., d)
        raise NotImplementedError

    def row_logits(self, idx: torch.Tensor) -> torch.Tensor:
        return self.logits(self.X[idx])

    def vertex_logits(self, idx: torch.Tensor) -> torch.Tensor:
        """(B, G) logits of the one-step vertices (``side``) of training rows ``idx``."""
        return self.logits(one_step_vertices(self.X[idx], self.reference, self.groups, self.side))

    def reference_logit(self) -> torch.Tensor:
        return self.logits(self.reference[None, :])[0]


class LinearFamily(Family):
    kind = "logistic regression"

    def __init__(self, estimator: LogisticRegression, X, reference, groups, *args):
        super().__init__(estimator, X, reference, groups, *args)
        self.coef = torch.tensor(self.sign * estimator.coef_[0], dtype=torch.float32, device=self.device,
                                 requires_grad=True)
        self.intercept = torch.tensor(self.sign * estimator.intercept_[0], dtype=torch.float32, device=self.device,
                                      requires_grad=True)
        self.parameters = [self.coef, self.intercept]
        self.moments = torch.as_tensor(group_moments(X, reference, groups), dtype=torch.float32, device=self.device)

    def logits(self, Z):
        return Z @ self.coef + self.intercept

    def export(self):
        out = copy.deepcopy(self.estimator)
        out.coef_ = self.sign * self.coef.detach().double().cpu().numpy()[None, :]
        out.intercept_ = np.array([self.sign * float(self.intercept.detach())])
        return out


class MLPFamily(Family):
    kind = "MLP"
    schedule = {"warmup_epochs": 0, "sev_epochs": 15}  # fine-tuning a fitted network (module docstring)
    strengths = {**Family.strengths, "all_opt_plus": 0.1, "all_opt_minus": 0.1}

    @classmethod
    def defaults(cls, estimator: MLPClassifier, objective: str) -> dict:
        return {**super().defaults(estimator, objective), "learning_rate": float(estimator.learning_rate_init)}

    def __init__(self, estimator: MLPClassifier, *args):
        super().__init__(estimator, *args)
        if estimator.activation not in ACTIVATIONS or estimator.out_activation_ != "logistic":
            raise IntakeError(f"An MLP with {estimator.activation} hidden units and a {estimator.out_activation_} "
                              "output cannot be trained here; use a binary MLPClassifier.")
        self.activation = ACTIVATIONS[estimator.activation]
        last = len(estimator.coefs_) - 1
        self.weights = [torch.tensor((self.sign if i == last else 1.0) * w, dtype=torch.float32, device=self.device,
                                     requires_grad=True) for i, w in enumerate(estimator.coefs_)]
        self.biases = [torch.tensor((self.sign if i == last else 1.0) * b, dtype=torch.float32, device=self.device,
                                    requires_grad=True) for i, b in enumerate(estimator.intercepts_)]
        self.parameters = self.weights + self.biases

    def logits(self, Z):
        h = Z
        for W, b in zip(self.weights[:-1], self.biases[:-1]):
            h = self.activation(h @ W + b)
        return (h @ self.weights[-1] + self.biases[-1])[..., 0]

    def export(self):
        out = copy.deepcopy(self.estimator)
        last = len(self.weights) - 1
        out.coefs_ = [(self.sign if i == last else 1.0) * w.detach().double().cpu().numpy()
                      for i, w in enumerate(self.weights)]
        out.intercepts_ = [(self.sign if i == last else 1.0) * b.detach().double().cpu().numpy()
                           for i, b in enumerate(self.biases)]
        return out


class TreeWeightsFamily(Family):
    """Gradient boosting with its trees fixed: logit = init + Σ_t w_t · learning_rate · tree_t(x)."""

    kind = "GBDT"
    # fine-tuning fitted trees' weights: App. B's 70 warm-up epochs at 0.1 cost COMPAS's demo 2.2 points of test
    # accuracy whatever λ (0.686 → 0.664), so a first run with the defaults failed; without the warm-up, at 0.03,
    # the SEV term shortens the explanations and the accuracy holds (tests/test_sparse_training.py, every demo)
    schedule = {"learning_rate": 0.03, "warmup_epochs": 0, "sev_epochs": 15}

    def __init__(self, estimator: GradientBoostingClassifier, *args):
        super().__init__(estimator, *args)
        if estimator.estimators_.shape[1] != 1 or estimator.init_ == "zero" or estimator.init not in (None, "zero"):
            raise IntakeError("Only a binary GradientBoostingClassifier with its default start (the class prior) can "
                              "be reweighted here.")
        self.trees = [t.tree_ for t in estimator.estimators_[:, 0]]
        width = max(t.node_count for t in self.trees)
        values = np.zeros((len(self.trees), width))
        for i, tree in enumerate(self.trees):
            values[i, :tree.node_count] = estimator.learning_rate * tree.value[:, 0, 0]
        self.values = torch.as_tensor(self.sign * values, dtype=torch.float32, device=self.device)
        self.offsets = torch.arange(len(self.trees), device=self.device) * width
        ref = self.reference.cpu().numpy()[None, :].astype(np.float32)
        raw = estimator.decision_function(ref.astype(float))[0]
        trees_at_reference = sum(estimator.learning_rate * t.predict(ref).ravel()[0] for t in self.trees)
        self.init = self.sign * float(raw - trees_at_reference)
        self.node_type = np.uint8 if width <= 256 else np.int32
        X32 = self.X.cpu().numpy()
        self.row_nodes = self._leaves(X32)
        self.reference_nodes = self._leaves(ref)
        self.vertex_nodes = None if self.side is None else self._vertex_leaves(X32, ref[0])
        self.weights = torch.ones(len(self.trees), dtype=torch.float32, device=self.device, requires_grad=True)
        self.parameters = [self.weights]

    def _leaves(self, Z: np.ndarray) -> torch.Tensor:
        """(n, trees) leaf index of every row in every tree (float32 inputs, as sklearn's trees compare)."""
        nodes = np.empty((len(Z), len(self.trees)), dtype=self.node_type)
        for i, tree in enumerate(self.trees):
            nodes[:, i] = tree.apply(np.ascontiguousarray(Z, dtype=np.float32))
        return torch.as_tensor(nodes, device=self.device)

    def _vertex_leaves(self, X: np.ndarray, reference: np.ndarray) -> torch.Tensor:
        """(n, G, trees) leaf indices of every one-step vertex, computed once for the whole run."""
        groups = self.groups.cpu().numpy().astype(bool)
        out = torch.empty((len(X), len(groups), len(self.trees)), dtype=self.row_nodes.dtype, device=self.device)
        for g, columns in enumerate(groups):
            mixed = np.where(columns, X, reference) if self.side == "plus" else np.where(columns, reference, X)
            out[:, g, :] = self._leaves(mixed)
        return out

    def _score(self, nodes: torch.Tensor) -> torch.Tensor:
        leaf_values = self.values.flatten()[nodes.long() + self.offsets]
        return self.init + leaf_values @ self.weights

    def logits(self, Z):
        return self._score(self._leaves(Z.detach().cpu().numpy().reshape(-1, Z.shape[-1])).reshape(
            *Z.shape[:-1], len(self.trees)))

    def row_logits(self, idx):
        return self._score(self.row_nodes[idx])

    def vertex_logits(self, idx):
        return self._score(self.vertex_nodes[idx])

    def reference_logit(self):
        return self._score(self.reference_nodes)[0]

    def export(self):
        out = copy.deepcopy(self.estimator)
        for tree, w in zip(out.estimators_[:, 0], self.weights.detach().double().cpu().numpy()):
            tree.tree_.value[:] *= w
        return out


FAMILY_CLASSES = {LogisticRegression: LinearFamily, MLPClassifier: MLPFamily,
                  GradientBoostingClassifier: TreeWeightsFamily}


def family_of(estimator) -> str:
    """The family's name in words, or an IntakeError naming what can be trained."""
    if type(estimator) in FAMILY_CLASSES:
        return FAMILY_CLASSES[type(estimator)].kind
    what = "An uploaded model (it runs in its sandboxed worker)" if isinstance(estimator, Stage) else \
        f"A {type(estimator).__name__}"
    raise IntakeError(f"{what} cannot be trained for sparse explanations here; use a logistic "
                      "regression, an MLP or a gradient-boosting classifier (the demo models L1/L2 LR, MLP, "
                      "gradient boosting).")


DEFAULTS_NOTE = (f"logistic regression: the paper's App. B schedule (learning rate {APP_B['learning_rate']:g}, "
                 f"{APP_B['warmup_epochs']} warm-up epochs, {APP_B['sev_epochs']} with the SEV term, λ = 1; Vol-Opt "
                 f"λ = {Family.strengths['vol_opt']:g}); gradient boosting: its trees' weights fine-tuned at "
                 f"{TreeWeightsFamily.schedule['learning_rate']:g}, no warm-up, "
                 f"{TreeWeightsFamily.schedule['sev_epochs']} epochs with the SEV term, λ = 1; MLP: fine-tuned at its "
                 f"own learning rate, no warm-up, {MLPFamily.schedule['sev_epochs']} epochs with the SEV term, "
                 f"λ = {MLPFamily.strengths['all_opt_plus']:g}; "
                 f"All-Opt®: λ = {Family.strengths['all_opt_restricted']:g} for every model")
