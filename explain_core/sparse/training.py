"""Training models whose decisions have sparse explanations (SEV paper §4, App. B-C): All-Opt⁺, All-Opt⁻,
All-Opt® and Vol-Opt added to the binary cross-entropy, starting from a model the app already has.

The families, each the final estimator of a model whose preprocessing is traced column by column
(:func:`~explain_core.intake.encoding.encoded_model`), trained on the encoded training rows:

- logistic regression (``LogisticRegression``): the coefficients and the intercept train;
- MLP (``MLPClassifier``, e.g. the demo's two hidden layers of 128): every weight and bias trains;
- gradient boosting (``GradientBoostingClassifier``): every tree stays as it is and one weight per tree trains
  (App. C). Each tree's output on every training row and on every one-step vertex is computed once, before
  training, as the tree's leaf index (the vertices never change); an epoch only gathers leaf values.

The schedule (App. B): batches of 128, Adam, ``warmup_epochs`` of BCE alone, then ``sev_epochs`` with
``λ·ℓ_SEV + C₂·ℓ_Pos_base`` added. A knob left at None takes its family's default (:func:`default_settings`):
App. B for logistic regression and gradient boosting (learning rate 0.1, 70 + 30 epochs, λ = 1; Vol-Opt λ = 0.01, the
paper's authors' setting for Adult: at λ = 1 the log-volume's gradient dwarfs the BCE's and costs ≈ 2 points of
accuracy there). An MLP is fine-tuned instead: App. B trains the authors' network from scratch, and applied to a
fitted, early-stopped MLPClassifier its 70 BCE epochs over-fit and Adam's step of 0.1 throws the network off (Adult,
3 splits: −0.5 to −4 points of test accuracy). So the MLP keeps its own Adam step (``learning_rate_init``), has no
warm-up (the base model is the warm-up's result) and 15 epochs with the SEV term, at λ = 0.1 for All-Opt⁺ and
All-Opt⁻ (the authors' Adult setting). All-Opt® takes λ = 3 in every family: its restricted groups leave fewer moves
to push, and at λ = 1 COMPAS keeps 0-15 % (LR) and 0-22 % (MLP) of its positive test rows unexplained across splits,
at 3 at most 3.5 %, for the paper's cost of about 3 points of accuracy (§5.5; bench/sev_training.py). The result is
an ordinary scikit-learn estimator of the same class with its weights replaced, in a copy of the model's pipeline:
it goes through the same adapter, exports as skops (the vetted types) and ONNX (:mod:`~explain_core.intake.onnx_export`),
and reloads with the same predictions.
"""
from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable

import numpy as np
import torch
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline

from ..errors import ExplainError, IntakeError, check_choice
from ..intake.data import demo_names
from ..intake.demo_models import TrainedModel, demo_model, evaluate, model_key, train_model
from ..intake.encoding import EncodedModel, encoded_model
from ..intake.models import wrap_model
from ..setup import Setup, make_setup
from ..sev.cube import ProgressFn
from .compare import SparseOrigin
from .losses import (DEFAULT_EPS, DEFAULT_THETA, OBJECTIVES, REFERENCE_SET_OBJECTIVES, VERTEX_SIDE, all_opt_minus,
                     all_opt_plus, all_opt_references, group_matrix, group_moments, one_step_vertices, pos_base,
                     reference_margin, vol_opt)
from .references import attach_references

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "logistic": torch.sigmoid, "identity": lambda h: h}


APP_B = {"learning_rate": 0.1, "warmup_epochs": 70, "sev_epochs": 30}
SCHEDULE_KNOBS = ("strength", "learning_rate", "warmup_epochs", "sev_epochs")


class TrainingCancelled(ExplainError):
    """The caller cancelled a training run (its ``cancel`` callable returned True)."""


@dataclass(frozen=True)
class TrainingSettings:
    """Every knob of a run: the objective, λ (C₁ of eq. 9), C₂ and θ of ℓ_Pos_base, the schedule, Vol-Opt's ε, the
    groups held fixed for All-Opt® and the seed. λ, the learning rate and the epochs left at None take the model
    family's defaults when the run starts (:func:`default_settings`); a result's settings have them filled in."""

    objective: str = "all_opt_plus"
    strength: float | None = None
    pos_base_strength: float = 1.0
    theta: float = DEFAULT_THETA
    warmup_epochs: int | None = None
    sev_epochs: int | None = None
    batch_size: int = 128
    learning_rate: float | None = None
    eps: float = DEFAULT_EPS
    restricted: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self):
        check_choice(self.objective, OBJECTIVES, "SEV objective")
        if (self.warmup_epochs or 0) < 0 or (self.sev_epochs or 0) < 0 or self.batch_size < 1 \
                or (self.learning_rate is not None and self.learning_rate <= 0):
            raise IntakeError("Epochs must be ≥ 0, the batch size ≥ 1 and the learning rate > 0.")
        if (self.strength or 0) < 0 or self.pos_base_strength < 0 or not 0 <= self.theta < 1:
            raise IntakeError("λ and C₂ must be ≥ 0 and θ in [0, 1).")
        if self.objective == "all_opt_restricted" and not self.restricted:
            raise IntakeError("All-Opt® needs restricted features: choose the features an explanation may not change.")

    @property
    def label(self) -> str:
        return OBJECTIVES[self.objective]

    @property
    def epochs(self) -> int:
        """All epochs of a run (of settings with the defaults filled in: :meth:`resolved`, a result's)."""
        return self.warmup_epochs + self.sev_epochs

    def resolved(self, defaults: dict) -> "TrainingSettings":
        """These settings with every knob left at None taken from ``defaults`` (:func:`default_settings`)."""
        return replace(self, **{k: defaults[k] for k in SCHEDULE_KNOBS if getattr(self, k) is None})


@dataclass(frozen=True)
class SparseTrainingResult:
    """A trained model (``estimator``, and ``pipeline``: the base model's encoder before it) with its settings and
    per-epoch history (``bce``, ``sev``, ``pos_base``, ``total``: mean over the epoch's batches)."""

    estimator: object
    pipeline: Pipeline
    family: str
    settings: TrainingSettings
    history: tuple[dict, ...]
    device: str
    seconds: float
    base_key: str
    base_name: str

    @property
    def name(self) -> str:
        return f"{self.settings.label} (λ = {self.settings.strength:g}) from {self.base_name}"

    def summary(self) -> dict:
        return {"family": self.family, "base_model": self.base_name, "base_key": self.base_key,
                "settings": asdict(self.settings),
                "device": self.device, "seconds": self.seconds, "history": list(self.history)}

    __json__ = summary


# ---------------------------------------------------------------------------------------------------
# Families: the model's score on encoded rows as a differentiable function of its trainable weights

class _Family:
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


class _Linear(_Family):
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


class _MLP(_Family):
    kind = "MLP"
    schedule = {"warmup_epochs": 0, "sev_epochs": 15}  # fine-tuning a fitted network (module docstring)
    strengths = {**_Family.strengths, "all_opt_plus": 0.1, "all_opt_minus": 0.1}

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


class _TreeWeights(_Family):
    """Gradient boosting with its trees fixed: logit = init + Σ_t w_t · learning_rate · tree_t(x)."""

    kind = "GBDT"

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


FAMILY_CLASSES = {LogisticRegression: _Linear, MLPClassifier: _MLP, GradientBoostingClassifier: _TreeWeights}


def family_of(estimator) -> str:
    """The family's name in words, or an IntakeError naming what can be trained."""
    if type(estimator) in FAMILY_CLASSES:
        return FAMILY_CLASSES[type(estimator)].kind
    raise IntakeError(f"A {type(estimator).__name__} cannot be trained for sparse explanations here; use a logistic "
                      "regression, an MLP or a gradient-boosting classifier (the demo models L1/L2 LR, MLP, "
                      "gradient boosting).")


DEFAULTS_NOTE = (f"logistic regression and gradient boosting: the paper's App. B schedule (learning rate "
                 f"{APP_B['learning_rate']:g}, {APP_B['warmup_epochs']} warm-up epochs, {APP_B['sev_epochs']} with the "
                 f"SEV term, λ = 1; Vol-Opt λ = {_Family.strengths['vol_opt']:g}); MLP: fine-tuned at its own learning "
                 f"rate, no warm-up, {_MLP.schedule['sev_epochs']} epochs with the SEV term, "
                 f"λ = {_MLP.strengths['all_opt_plus']:g}; All-Opt®: λ = {_Family.strengths['all_opt_restricted']:g} "
                 "for every model")


def default_settings(setup: Setup, objective: str) -> dict:
    """λ, the learning rate and the epochs a run on the setup's model takes when they are left at None: App. B for
    logistic regression and gradient boosting, the fine-tuning schedule for an MLP (module docstring)."""
    check_choice(objective, OBJECTIVES, "SEV objective")
    estimator = _encoded_parts(setup).estimator
    return FAMILY_CLASSES[type(estimator)].defaults(estimator, objective)


def _encoded_parts(setup: Setup) -> EncodedModel:
    model = setup.model
    if setup.dataset.task != "classification" or model.score_kind != "proba":
        raise IntakeError("Sparse-explanation training needs a binary classifier scored by its probability.")
    parts = encoded_model(model, setup.dataset.layout.groups)
    if parts is None:
        raise IntakeError("This model's preprocessing cannot be traced feature by feature, so its encoded inputs "
                          "cannot be trained on; use a model trained here (Data & model page).")
    if len(getattr(parts.estimator, "classes_", ())) != 2:
        raise IntakeError("Sparse-explanation training needs a two-class model.")
    family_of(parts.estimator)
    return parts


# ---------------------------------------------------------------------------------------------------
# Training

def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train_sparse(setup: Setup, settings: TrainingSettings = TrainingSettings(), *,
                 progress: ProgressFn | None = None, cancel: Callable[[], bool] | None = None,
                 device: torch.device | str | None = None) -> SparseTrainingResult:
    """Train the setup's model for sparse explanations (eq. 9: ``BCE + λ·ℓ_SEV + C₂·ℓ_Pos_base``) on its training
    rows, against the reference it explains positive rows with; ``progress`` is called after every epoch,
    ``cancel`` (checked after every batch) stops the run with :class:`TrainingCancelled`."""
    device = torch.device(device) if device is not None else default_device()
    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # batches of 128 rows: threads only add synchronisation (15× slower on 2 busy cores)
    try:
        return _train(setup, settings, progress, cancel, device)
    finally:
        torch.set_num_threads(threads)


@dataclass
class TrainingProblem:
    """What a run trains: the family (weights, encoded rows, reference, one-step vertices), the targets, the movable
    groups (All-Opt®), the model's encoder/estimator split and the settings with the family's defaults filled in."""

    family: "_Family"
    y: torch.Tensor
    movable: torch.Tensor
    parts: EncodedModel
    settings: TrainingSettings


def prepare(setup: Setup, settings: TrainingSettings, device: torch.device | str | None = None) -> TrainingProblem:
    """Encode the training rows and the reference once, build the family (with its precomputed vertices) and fill in
    the settings left at None with the family's defaults."""
    device = torch.device(device) if device is not None else default_device()
    parts = _encoded_parts(setup)
    family_cls = FAMILY_CLASSES[type(parts.estimator)]
    if settings.objective == "vol_opt" and family_cls is not _Linear:
        raise IntakeError("Vol-Opt (eq. 5) is defined for linear models; use All-Opt⁺ for an MLP or gradient "
                          "boosting.")
    layout, dataset = setup.dataset.layout, setup.dataset
    unknown = set(settings.restricted) - set(layout.names)
    if unknown:
        raise IntakeError(f"Unknown restricted features: {', '.join(sorted(unknown))}.")
    movable = torch.tensor([name not in set(settings.restricted) for name in layout.names], device=device)
    columns = list(setup.model.columns)
    X = parts.encode(dataset.features.iloc[setup.train_rows][columns])
    reference = parts.encode_reference(setup.reference_of_label(1).values, columns)
    sign = 1.0 if list(parts.estimator.classes_).index(setup.model.positive_class) == 1 else -1.0
    groups = group_matrix(parts.column_group, layout.size)
    family = family_cls(parts.estimator, X, reference, groups, sign, VERTEX_SIDE.get(settings.objective), device,
                        setup.model.threshold)
    attach_references(family, setup, parts, settings)  # All-Opt^© / All-Opt^F: each row's own references
    y = torch.as_tensor(dataset.y[setup.train_rows], dtype=torch.float32, device=device)
    return TrainingProblem(family, y, movable, parts,
                           settings.resolved(family.defaults(parts.estimator, settings.objective)))


def _train(setup: Setup, settings: TrainingSettings, progress: ProgressFn | None, cancel: Callable[[], bool] | None,
           device: torch.device) -> SparseTrainingResult:
    started = time.perf_counter()
    torch.manual_seed(settings.seed)
    problem = prepare(setup, settings, device)
    family, y, movable, settings = problem.family, problem.y, problem.movable, problem.settings
    optimiser = torch.optim.Adam(family.parameters, lr=settings.learning_rate)
    rng = np.random.default_rng(settings.seed)
    history = []
    for epoch in range(settings.epochs):
        sev_on = epoch >= settings.warmup_epochs
        sums = dict.fromkeys(("bce", "sev", "pos_base", "total"), 0.0)
        batches = 0
        order = rng.permutation(len(y))
        for start in range(0, len(y), settings.batch_size):
            idx = torch.as_tensor(order[start:start + settings.batch_size], device=device)
            terms = batch_loss(family, idx, y[idx], settings, movable, sev_on)
            optimiser.zero_grad()
            terms["total"].backward()
            optimiser.step()
            for k, v in terms.items():
                sums[k] = sums[k] + v.detach()  # summed on the device: no synchronisation per batch
            batches += 1
            if cancel is not None and cancel():
                raise TrainingCancelled(f"Training cancelled in epoch {epoch + 1} of {settings.epochs}.")
        history.append({"epoch": epoch + 1, "phase": "sev" if sev_on else "warm-up",
                        **{k: float(v) / max(1, batches) for k, v in sums.items()}})
        if progress is not None:
            progress((epoch + 1) / max(1, settings.epochs), f"epoch {epoch + 1} of {settings.epochs} "
                     f"({'BCE + ' + settings.label if sev_on else 'warm-up: BCE'}): loss {history[-1]['total']:.4f}")
    estimator = family.export()
    pipeline = Pipeline([("encode", problem.parts.encoder), ("model", estimator)])
    return SparseTrainingResult(estimator, pipeline, family.kind, settings, tuple(history), str(device),
                                time.perf_counter() - started, setup.model_key, setup.model.name)


def batch_loss(family: _Family, idx: torch.Tensor, y: torch.Tensor, settings: TrainingSettings,
               movable: torch.Tensor, sev_on: bool) -> dict[str, torch.Tensor]:
    """The loss terms of one batch (eq. 9); the SEV terms and ℓ_Pos_base only after the warm-up."""
    logits = family.row_logits(idx)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
    zero = bce.new_zeros(())
    terms = {"bce": bce, "sev": zero, "pos_base": zero}
    if sev_on:
        terms["sev"] = sev_term(family, idx, logits, settings, movable)
        terms["pos_base"] = pos_base(torch.sigmoid(family.reference_logit()), family.threshold, settings.theta)
    terms["total"] = bce + settings.strength * terms["sev"] + settings.pos_base_strength * terms["pos_base"]
    return terms


def sev_term(family: _Family, idx: torch.Tensor, logits: torch.Tensor, settings: TrainingSettings,
             movable: torch.Tensor) -> torch.Tensor:
    """ℓ_SEV of the batch: All-Opt over the rows the current model predicts positive, or Vol-Opt."""
    if settings.objective == "vol_opt":
        return vol_opt(family.coef, family.intercept, family.reference, family.moments, family.groups,
                       settings.eps, reference_margin(family.threshold, settings.theta))
    T = family.threshold
    positive = (torch.sigmoid(logits.detach()) > T).float()
    scores = torch.sigmoid(family.vertex_logits(idx))
    if settings.objective in REFERENCE_SET_OBJECTIVES:
        return all_opt_references(scores, positive, T, settings.theta)
    if settings.objective == "all_opt_plus":
        return all_opt_plus(scores, positive, T)
    return all_opt_minus(scores, positive, T, movable if settings.objective == "all_opt_restricted" else None)


def sparse_setup(base: Setup, result: SparseTrainingResult) -> Setup:
    """A setup with the trained model in place of the base model: same data, split, reference and restricted
    features; keyed by the base model and the settings."""
    dataset = base.dataset
    adapter = wrap_model(result.pipeline, dataset, threshold=base.model.threshold,
                         positive_class=base.model.positive_class, name=result.name)
    s = result.settings
    key = model_key("sparse", base.model_key, s.objective, s.strength, s.pos_base_strength, s.theta,
                    s.warmup_epochs, s.sev_epochs, s.batch_size, s.learning_rate, ",".join(s.restricted), s.seed)
    trained = TrainedModel(adapter, base.train_rows, base.test_rows,
                           evaluate(adapter, dataset, base.train_rows, base.test_rows), s.seed, key,
                           f"trained here for sparse explanations: {result.name} (seed {s.seed})", dataset.key)
    return replace(make_setup(dataset, trained, reference=base.reference, restricted=base.restricted),
                   training=SparseOrigin(result, base))


TRAINABLE_KINDS = ("l2_lr", "l1_lr", "mlp", "gbdt")


def base_setup(setup: Setup, kind: str, *, seed: int = 0) -> Setup:
    """A demo kind of model (``l2_lr``, ``l1_lr``, ``mlp``, ``gbdt``) on the setup's data, with its reference and
    restricted features: the cached demo model for a bundled dataset, else trained here on the seeded split."""
    check_choice(kind, TRAINABLE_KINDS, "base model kind")
    data = setup.dataset
    bundled = data.name in demo_names() and setup.model_key.startswith("demo:")
    trained = demo_model(data, kind, seed=seed) if bundled else train_model(data, kind, seed=seed)
    return make_setup(data, trained, reference=setup.reference, restricted=setup.restricted)


def skops_bytes(setup: Setup) -> bytes:
    """The setup's model (a Pipeline: encoder + trained estimator) as a ``.skops`` file's bytes."""
    import skops.io as sio

    return sio.dumps(setup.model.estimator)
