"""A model before and after sparse-explanation training, side by side (SEV paper §5.2, Figs. 2-4, Tables 4-9):
accuracy and AUC, mean SEV⁺ / SEV⁻ / SEV® on the test rows each model predicts positive, the share of those rows
with no explanation, the share of positive predictions; and the pure figures drawn from it: SEV distributions,
a Sankey of each test row's SEV before → after, feature prevalence before / after.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analysis import DatasetSEV, dataset_sev, predicted_rows
from ..setup import SEVParameters, Setup
from ..sev.cube import ProgressFn
from ..sev.summaries import NOT_EXPLAINED, prevalence_table, sev_counts
from ..views.style import BAR_COLOURS, TEMPLATE
from ..views.vocabulary import html_text

if TYPE_CHECKING:
    from .training import SparseTrainingResult

NEGATIVE = "predicted negative"
SIDES = ("before", "after")
LINK_COLOUR = "rgba(76, 120, 168, 0.25)"
KIND_LABELS = {"plus": "SEV⁺", "minus": "SEV⁻", "restricted": "SEV®"}


@dataclass(frozen=True)
class ModelSparsity:
    """One model on its test rows: metrics, the share predicted positive, and SEV of every positive test row
    (``restricted`` only with restricted features)."""

    metrics: dict
    positive_share: float
    sev: dict[str, DatasetSEV]
    reference_score: float

    def mean(self, kind: str) -> float:
        values = [v for v in self.sev[kind].values if v is not None]
        return float(np.mean(values)) if values else float("nan")

    def unexplained_share(self, kind: str) -> float:
        values = self.sev[kind].values
        return sum(v is None for v in values) / len(values) if values else float("nan")


def model_sparsity(setup: Setup, params: SEVParameters, progress: ProgressFn | None = None) -> ModelSparsity:
    """SEV⁺, SEV⁻ and (with the setup's restricted features) SEV® of every test row the model predicts positive."""
    rows = predicted_rows(setup, setup.test_rows, label=1)
    plain = replace(setup, restricted=())
    sev = {"plus": dataset_sev(plain, rows, params, kind="plus", progress=progress),
           "minus": dataset_sev(plain, rows, params, kind="minus", progress=progress)}
    if setup.restricted:
        sev["restricted"] = dataset_sev(setup, rows, params, kind="minus", progress=progress)
    reference = setup.reference_of_label(1).as_frame(setup.dataset.columns)
    return ModelSparsity(dict(setup.metrics), len(rows) / max(1, len(setup.test_rows)), sev,
                         float(setup.model.score(reference)[0]))


@dataclass(frozen=True)
class SparsityComparison:
    """The base model (``before``) and the trained one (``after``) on the same test rows."""

    before: ModelSparsity
    after: ModelSparsity
    test_rows: np.ndarray
    group_names: tuple[str, ...]
    reference_means: dict = field(default_factory=dict)  # All-Opt^© / ^F: mean SEV^© / SEV^F, (before, after)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(k for k in KIND_LABELS if k in self.before.sev and k in self.after.sev)

    def table(self) -> pd.DataFrame:
        """The before/after table (paper Tables 4-9 plus the unexplainable and positive shares)."""
        rows = {}
        for part in ("train", "test"):
            for metric, name in (("accuracy", "accuracy"), ("auc", "AUC")):
                rows[f"{part} {name}"] = [m.metrics.get(f"{part}_{metric}", float("nan")) for m in self._sides]
        for kind in self.kinds:
            rows[f"mean {KIND_LABELS[kind]} (test rows predicted positive)"] = [m.mean(kind) for m in self._sides]
        rows.update({name: list(pair) for name, pair in self.reference_means.items()})
        last = "restricted" if "restricted" in self.kinds else "minus"
        rows[f"share with no {KIND_LABELS[last]} explanation"] = [m.unexplained_share(last) for m in self._sides]
        rows["share of test rows predicted positive"] = [m.positive_share for m in self._sides]
        rows["reference's score (must stay below the threshold)"] = [m.reference_score
                                                                                     for m in self._sides]
        return pd.DataFrame.from_dict(rows, orient="index", columns=list(SIDES))

    def headline(self) -> str:
        """The answer in one sentence: the mean SEV that was targeted and the test accuracy, before → after."""
        kind = "restricted" if "restricted" in self.kinds else None
        parts = [f"mean {KIND_LABELS[k]} {self.before.mean(k):.2f} → {self.after.mean(k):.2f}"
                 for k in ((kind,) if kind else ("plus", "minus"))]
        parts += [f"{name.split(' (')[0]} {a:.2f} → {b:.2f}" for name, (a, b) in self.reference_means.items()]
        if kind:
            parts.append(f"rows with no {KIND_LABELS[kind]} explanation {self.before.unexplained_share(kind):.0%} → "
                         f"{self.after.unexplained_share(kind):.0%}")
        acc = [m.metrics.get("test_accuracy", float("nan")) for m in self._sides]
        return "; ".join(parts) + f"; test accuracy {acc[0]:.3f} → {acc[1]:.3f}."

    @property
    def _sides(self) -> tuple[ModelSparsity, ModelSparsity]:
        return self.before, self.after

    def transitions(self, kind: str) -> pd.DataFrame:
        """Per test row predicted positive by either model: its SEV before and after (``NEGATIVE`` where that
        model predicts it negative, ``NOT_EXPLAINED`` where no explanation was found)."""
        states = [_states(side.sev[kind]) for side in self._sides]
        rows = sorted(set(states[0]) | set(states[1]))
        return pd.DataFrame({"row": rows, "before": [states[0].get(r, NEGATIVE) for r in rows],
                             "after": [states[1].get(r, NEGATIVE) for r in rows]})

    def prevalence(self, kind: str) -> pd.DataFrame:
        """Share of explained rows whose minimal explanations use each feature, before and after (Fig. 4b)."""
        tables = [prevalence_table(side.sev[kind].results, self.group_names) for side in self._sides]
        return pd.DataFrame({"group": self.group_names, "before": tables[0]["share"].to_numpy(),
                             "after": tables[1]["share"].to_numpy()})


def _states(result: DatasetSEV) -> dict[int, str]:
    return {int(r): (str(v) if v is not None else NOT_EXPLAINED) for r, v in zip(result.rows, result.values)}


def compare_sparsity(before: Setup, after: Setup, params: SEVParameters,
                     progress: ProgressFn | None = None) -> SparsityComparison:
    """:func:`model_sparsity` of both models on the base setup's test rows."""
    return SparsityComparison(model_sparsity(before, params, progress), model_sparsity(after, params, progress),
                              np.asarray(before.test_rows), tuple(before.dataset.layout.names))


@dataclass(frozen=True)
class SparseOrigin:
    """Where a model trained for sparse explanations came from (``Setup.training``): the run and the base setup;
    the before/after comparison is computed once per SEV parameters (the page and the report share it)."""

    result: "SparseTrainingResult"
    base: Setup
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def comparison(self, after: Setup, params: SEVParameters,
                   progress: ProgressFn | None = None) -> SparsityComparison:
        key = (after.key, params)
        if key not in self.memo:
            from .references import reference_means  # torch: imported with the training, not with the reports

            compared = compare_sparsity(self.base, after, params, progress)
            means = reference_means(self.result.settings.objective, self.base, after, params)
            self.memo[key] = replace(compared, reference_means=means) if means else compared
        return self.memo[key]


# ---------------------------------------------------------------------------------------------------
# Figures (pure: data → plotly figure)

def _order(state: str) -> tuple:
    return (0, int(state), "") if state.isdigit() else (1, 0, state)


def sev_sankey(transitions: pd.DataFrame, *, label: str = "SEV⁺") -> go.Figure:
    """Each row's SEV before (left) → after (right), one band per (before, after) pair, width = rows (Fig. 2b)."""
    left = sorted(set(transitions["before"]), key=_order)
    right = sorted(set(transitions["after"]), key=_order)
    names = [f"before: {label} {s}" if s.isdigit() else f"before: {s}" for s in left] + \
            [f"after: {label} {s}" if s.isdigit() else f"after: {s}" for s in right]
    flows = transitions.groupby(["before", "after"], sort=False).size().reset_index(name="rows")
    fig = go.Figure(go.Sankey(
        arrangement="snap",
        node=dict(label=names, pad=14, thickness=16, color=BAR_COLOURS["counts"]),
        link=dict(source=[left.index(b) for b in flows["before"]],
                  target=[len(left) + right.index(a) for a in flows["after"]], value=flows["rows"].tolist(),
                  color=LINK_COLOUR, hovertemplate="%{source.label} → %{target.label}: %{value} rows<extra></extra>"),
        meta={"role": "sankey"}))
    fig.update_layout(template=TEMPLATE, title=f"Each test row's {label} before → after ({len(transitions)} rows)",
                      height=420, margin=dict(t=70, l=20, r=20, b=20))
    return fig


def sev_distributions(values: dict[str, Sequence[int | None]], *, label: str = "SEV⁺") -> go.Figure:
    """Grouped bars: the share of rows at each SEV value, one colour per model (``{"before": [...], ...}``)."""
    fig = go.Figure()
    colours = {"before": BAR_COLOURS["evaluated"], "after": BAR_COLOURS["counts"]}
    order = [str(v) for v in sev_counts([v for vals in values.values() for v in vals])["sev"]]  # one axis for all
    for side, vals in values.items():
        counts = sev_counts(vals)
        fig.add_trace(go.Bar(x=[str(v) for v in counts["sev"]], y=counts["share"], name=side,
                             customdata=counts["count"], marker_color=colours.get(side),
                             hovertemplate=f"{side}: {label} = %{{x}}, %{{y:.1%}} (%{{customdata}} rows)"
                                           "<extra></extra>"))
    fig.update_layout(template=TEMPLATE, barmode="group", title=f"{label} distribution before and after",
                      xaxis=dict(title=label, type="category", categoryorder="array", categoryarray=order),
                      yaxis=dict(title="share of rows", tickformat=".0%"))
    return fig


def prevalence_figure(prevalence: pd.DataFrame, *, label: str = "SEV⁺") -> go.Figure:
    """Horizontal grouped bars: share of explained rows whose explanations use each feature, before and after."""
    shown = prevalence.sort_values("after", kind="stable")
    fig = go.Figure()
    for side, colour in (("before", BAR_COLOURS["evaluated"]), ("after", BAR_COLOURS["prevalence"])):
        fig.add_trace(go.Bar(x=shown[side], y=shown["group"].map(html_text), orientation="h", name=side,
                             marker_color=colour, hovertemplate=f"{side}: %{{y}} in %{{x:.1%}}<extra></extra>"))
    fig.update_layout(template=TEMPLATE, barmode="group", title=f"Features in minimal {label} explanations",
                      xaxis=dict(title="share of explained rows", tickformat=".0%", range=[0, 1]),
                      yaxis=dict(title=None, type="category"), height=max(300, 60 + 36 * len(shown)))
    return fig


def history_figure(history: Sequence[dict]) -> go.Figure:
    """The loss terms per epoch (BCE, ℓ_SEV, ℓ_Pos_base and their weighted total); the warm-up shaded."""
    frame = pd.DataFrame(list(history))
    fig = go.Figure()
    for term, name in (("total", "total (eq. 9)"), ("bce", "BCE"), ("sev", "ℓ_SEV"), ("pos_base", "ℓ_Pos_base")):
        fig.add_trace(go.Scatter(x=frame["epoch"], y=frame[term], mode="lines", name=name))
    warm = frame.loc[frame["phase"] == "warm-up", "epoch"]
    if len(warm):
        fig.add_vrect(x0=0.5, x1=warm.max() + 0.5, fillcolor="rgba(186, 176, 172, 0.2)", line_width=0,
                      annotation_text="warm-up (BCE only)", annotation_position="top left")
    fig.update_layout(template=TEMPLATE, title="Loss terms per epoch (mean over the epoch's batches)",
                      xaxis=dict(title="epoch"), yaxis=dict(title="loss"))
    return fig
