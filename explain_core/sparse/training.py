"""Training models whose decisions have sparse explanations (SEV paper §4, App. B-C): All-Opt⁺, All-Opt⁻,
All-Opt® and Vol-Opt added to the binary cross-entropy, starting from a model the app already has.

The families (:mod:`~explain_core.sparse.families`: logistic regression, MLP, gradient boosting with one weight per
tree), each the final estimator of a model whose preprocessing is traced column by column
(:func:`~explain_core.intake.encoding.encoded_model`), trained on the encoded training rows.

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
it goes through the same adapter, exports as skops (the vetted types) and ONNX
(:mod:`~explain_core.intake.onnx_export`), and reloads with the same predictions.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Callable

import numpy as np
import torch
from sklearn.pipeline import Pipeline

from ..cache import Memo, memo_field
from ..errors import IntakeError, TrainingCancelled, check_choice
from ..vertices import ProgressFn
from ..intake.demos import demo_names
from ..intake.demo_models import demo_model, train_model
from ..intake.encoding import EncodedModel, encoded_model
from ..intake.models import wrap_model
from ..intake.trained import TrainedModel, evaluate, model_key
from ..limits import limits, over
from ..setup import SEVParameters, Setup, make_setup
from .compare import SparsityComparison, compare_sparsity
from .families import FAMILY_CLASSES, Family, LinearFamily, family_of
from .losses import (DEFAULT_EPS, DEFAULT_THETA, OBJECTIVES, REFERENCE_SET_OBJECTIVES, VERTEX_SIDE, all_opt_minus,
                     all_opt_plus, all_opt_references, group_matrix, pos_base,
                     reference_margin, vol_opt)
from .references import attach_references, reference_means

PROGRESS_BATCHES = 50  # progress is reported every this many batches (and each epoch)
SCHEDULE_KNOBS = ("strength", "learning_rate", "warmup_epochs", "sev_epochs")


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

    family: Family
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
    if settings.objective == "vol_opt" and family_cls is not LinearFamily:
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
    steps = settings.epochs * -(-len(y) // settings.batch_size)
    if steps > limits().train_steps:
        raise over("The number of optimiser steps (epochs × batches of the training rows)", steps,
                   limits().train_steps, "use larger batches or fewer epochs.")
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
            if progress is not None and batches % PROGRESS_BATCHES == 0:  # also where the app can stop a run
                done = (epoch + start / len(y)) / settings.epochs
                progress(done, f"epoch {epoch + 1} of {settings.epochs}, batch {batches}")
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


def batch_loss(family: Family, idx: torch.Tensor, y: torch.Tensor, settings: TrainingSettings,
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


def sev_term(family: Family, idx: torch.Tensor, logits: torch.Tensor, settings: TrainingSettings,
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


@dataclass(frozen=True)
class SparseOrigin:
    """Where a model trained for sparse explanations came from (``Setup.training``): the run and the base setup;
    the before/after comparison is computed once per SEV parameters (the page and the report share it)."""

    result: SparseTrainingResult
    base: Setup
    comparisons: Memo = memo_field("before/after comparisons by SEV parameters", max_entries=8)

    def comparison(self, after: Setup, params: SEVParameters,
                   progress: ProgressFn | None = None) -> SparsityComparison:
        def compute():
            compared = compare_sparsity(self.base, after, params, progress)
            means = reference_means(self.result.settings.objective, self.base, after, params)
            return replace(compared, reference_means=means) if means else compared
        return self.comparisons.get((after.key, params), compute)
