"""Text alternatives of the charts: one or two plain sentences per figure, read off the same data the figure draws,
so a reader who cannot see the chart (a screen reader, a text browser, a printout in black and white) gets its
message. Pages show each beside its chart; nothing here imports plotly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from ..vocabulary import METHOD_LABELS, format_number, join_words

if TYPE_CHECKING:
    from ..inspection.global_shap import GlobalShap
    from ..inspection.performance import ModelPerformance


def _ranked(values: pd.Series, top: int = 3, fmt=lambda v: format_number(v)) -> str:
    """``a (0.31), b (0.2) and c (0.05)``: the ``top`` largest values with their names."""
    shown = values.sort_values(ascending=False, kind="stable").head(top)
    return join_words([f"{name} ({fmt(v)})" for name, v in shown.items()])


# --- the model on its test rows ----------------------------------------------------------------------------

def roc_text(perf: "ModelPerformance") -> str:
    if perf.roc is None:
        return "No ROC curve: the test rows hold one class only."
    (tn, fp), (fn, tp) = perf.confusion.to_numpy()
    return (f"ROC curve: area under the curve {perf.auc:.3f} (0.5 is chance, 1 is perfect). At the threshold the "
            f"model flags {tp / max(1, tp + fn):.0%} of the rows that are positive, with {fp / max(1, fp + tn):.0%} "
            "of the negative rows flagged by mistake.")


def pr_text(perf: "ModelPerformance") -> str:
    if perf.pr is None:
        return "No precision-recall curve: the test rows hold one class only."
    (_, fp), (fn, tp) = perf.confusion.to_numpy()
    return (f"Precision against recall: average precision {perf.average_precision:.3f}, against "
            f"{perf.y.mean():.2f} for a model that guesses. At the threshold, {tp / max(1, tp + fp):.0%} of the "
            f"flagged rows are positive and {tp / max(1, tp + fn):.0%} of the positive rows are flagged.")


def confusion_text(perf: "ModelPerformance") -> str:
    counts = perf.confusion.to_numpy()
    names = perf.class_names
    parts = [f"of {counts[i].sum():,} rows truly {names[i]}, {counts[i, i]:,} "
             f"({counts[i, i] / max(1, counts[i].sum()):.0%}) are predicted so" for i in (0, 1)]
    return f"Confusion matrix at the threshold {format_number(perf.threshold)}: " + "; ".join(parts) + "."


def calibration_text(perf: "ModelPerformance") -> str:
    if perf.values is not None:
        v = perf.values
        corr = float(np.corrcoef(v["true"], v["predicted"])[0, 1]) if len(v) > 1 else float("nan")
        return (f"Predicted against true values of {len(v):,} test rows: correlation {corr:.2f} "
                "(1 would put every row on the diagonal).")
    if perf.calibration is None:
        return "No calibration chart: the model's score is not a probability."
    c = perf.calibration
    gap = (c["observed"] - c["predicted"]).abs()
    worst = int(gap.to_numpy().argmax())
    return (f"Calibration in {len(c)} bins: the observed share of positives is {gap.mean():.2f} from the predicted "
            f"probability on average; the largest gap is at a predicted {c['predicted'].iloc[worst]:.2f} "
            f"(observed {c['observed'].iloc[worst]:.2f}).")


def balance_text(perf: "ModelPerformance") -> str:
    b = perf.balance
    parts = [f"{part}: {b[part].iloc[1]:,} {perf.class_names[1]} of {b[part].sum():,} rows "
             f"({b[part].iloc[1] / max(1, b[part].sum()):.0%})" for part in b.columns]
    return "Class balance — " + "; ".join(parts) + "."


# --- over many rows ------------------------------------------------------------------------------------------

def importance_text(shap: "GlobalShap") -> str:
    return (f"Mean |SHAP| over {len(shap.rows)} test rows: the largest are {_ranked(shap.importance())} "
            f"({shap.output}).")


def prevalence_text(table: pd.DataFrame, label: str = "SEV") -> str:
    """Of :func:`~explain_core.sev.summaries.prevalence_table`."""
    share = pd.Series(table["share"].to_numpy(), index=table["group"])
    return (f"Features most often in a row's minimal {label} explanation: "
            f"{_ranked(share, fmt=lambda v: f'{v:.0%} of the rows')}.")


def beeswarm_text(shap: "GlobalShap", features: pd.DataFrame, top: int = 3) -> str:
    parts = []
    for group in shap.importance().head(top).index:
        j = shap.groups.index(group)
        codes = pd.to_numeric(features[group], errors="coerce")
        if codes.notna().sum() > 2 and codes.nunique() > 1:
            corr = float(np.corrcoef(codes.fillna(codes.median()), shap.values[:, j])[0, 1])
            trend = "higher values push the output up" if corr > 0.3 else (
                "higher values push it down" if corr < -0.3 else "no simple direction")
        else:
            trend = "a categorical feature"
        parts.append(f"{group} (SHAP from {format_number(shap.values[:, j].min())} to "
                     f"{format_number(shap.values[:, j].max())}; {trend})")
    return f"SHAP values of {len(shap.rows)} test rows, one dot per row and feature: " + "; ".join(parts) + "."


def dependence_text(shap: "GlobalShap", features: pd.DataFrame, group: str) -> str:
    j = shap.groups.index(group)
    frame = pd.DataFrame({"value": features[group].to_numpy(), "shap": shap.values[:, j]})
    means = frame.groupby("value", sort=True)["shap"].mean()
    if len(means) > 6:  # a numeric feature: its lowest and highest fifth
        order = frame.sort_values("value", kind="stable")
        fifth = max(1, len(order) // 5)
        low, high = order.head(fifth), order.tail(fifth)
        return (f"{group}: its lowest fifth of values (up to {format_number(low['value'].max())}) has a mean SHAP of "
                f"{format_number(low['shap'].mean())}, its highest fifth (from {format_number(high['value'].min())}) "
                f"{format_number(high['shap'].mean())}.")
    return f"{group}: mean SHAP by value — " + ", ".join(f"{v}: {format_number(s)}" for v, s in means.items()) + "."


# --- LENS ------------------------------------------------------------------------------------------------------

def pn_curve_text(curve: pd.DataFrame, tau: float) -> str:
    if not len(curve):
        return "No cumulative PN curve: no factor was scored."
    at = curve.iloc[int((curve["tau"] - tau).abs().to_numpy().argmin())]
    pn = curve["cumulative_pn"].dropna()
    span = (f"it falls from {pn.max():.2f} to {pn.min():.2f} as τ rises from {curve['tau'].min():g} to "
            f"{curve['tau'].max():g}") if len(pn) else "no factor passes at any τ"
    here = "no factor passes" if pd.isna(at["cumulative_pn"]) else f"{at['cumulative_pn']:.2f}"
    n = int(at["factors"])
    return f"Cumulative PN against τ: at τ = {at['tau']:g} it is {here} ({n} factor{'s' if n != 1 else ''}); {span}."


def ps_by_size_text(curve: pd.DataFrame, attribution: str = "SHAP") -> str:
    if not len(curve):
        return "No factor sizes to compare."
    parts = [f"k = {int(r['size'])}: LENS {r['lens_ps']:.2f}, top-k {attribution} {r['attribution_ps']:.2f}"
             for _, r in curve.iterrows()]
    gap = float((curve["lens_ps"] - curve["attribution_ps"]).max())
    return (f"Best PS of a factor of k features (LENS) beside the PS of the k features {attribution} ranks highest — "
            + "; ".join(parts) + f". The largest gap is {gap:.2f}.")


def dag_text(edges: Sequence[tuple[str, str]], highlight: Sequence[str] = ()) -> str:
    arrows = "; ".join(f"{a} → {b}" for a, b in edges)
    marked = f" Features of causal τ-minimal factors: {join_words(list(highlight))}." if highlight else ""
    return f"Causal graph with {len(edges)} arrows: {arrows}.{marked}"


def causation_text(result, outcome: str, other: str) -> str:
    """Of :class:`~explain_core.lens.causation.CausationProbabilities`: PN and PS in words, then PNS, each with
    its identified range."""
    what = join_words(list(result.factor))

    def share(value, bounds):
        if np.isnan(value):
            return "undefined (no row in the sample has that combination)"
        return f"{value:.0%} (between {bounds.low:.0%} and {bounds.high:.0%} whatever the equations' form)"

    return (f"Of the sampled rows that share this row's {what} and get {outcome}, moving {what} to another row's "
            f"values would change that to {other} for {share(result.pn, result.pn_bounds)}: necessity (PN). Of "
            f"those with other values that get {other}, taking this row's {what} would give {outcome} for "
            f"{share(result.ps, result.ps_bounds)}: sufficiency (PS). Both at once (PNS): "
            f"{share(result.pns, result.pns_bounds)} of all sampled rows.")


# --- linear explanations --------------------------------------------------------------------------------------

def weights_text(weights: pd.DataFrame) -> str:
    """Of the literal × method table drawn (:func:`~explain_core.views.linear.folded_weights`)."""
    parts = []
    for method in weights.columns:
        w = weights[method]
        w = w[w.abs() > 1e-12]
        top = w.abs().sort_values(ascending=False, kind="stable").head(3).index
        named = join_words([f"{name} ({w[name]:+.3f})" for name in top]) or "no literal"
        parts.append(f"{METHOD_LABELS.get(method, method)}: {len(w)} non-zero, largest {named}")
    return "Weights — " + "; ".join(parts) + "."


def sweep_text(summary: pd.DataFrame, parameter: str, metric: str = "relevance") -> str:
    parts = []
    for method, part in summary.groupby("method", sort=False):
        part = part.sort_values(parameter, kind="stable")
        parts.append(f"{method} from {part['mean'].iloc[0]:.3f} at {parameter} = {part[parameter].iloc[0]:g} to "
                     f"{part['mean'].iloc[-1]:.3f} at {parameter} = {part[parameter].iloc[-1]:g}")
    return f"Mean {metric} against {parameter}: " + "; ".join(parts) + "."


# --- the SEV, Compare and Sparser model pages' charts -----------------------------------------------------------

def sev_values_text(values: Sequence[int | float | None], label: str = "SEV⁻", missing: str = "not explained") -> str:
    """Of :func:`~explain_core.views.sev.sev_histogram` and the flip numbers' bars: rows per value; a None or NaN
    value is counted as ``missing`` ("never flip" for the flip numbers)."""
    from ..sev.summaries import sev_counts

    counts = sev_counts([None if pd.isna(v) else int(v) for v in values])
    parts = [f"{int(c):,} at {v}" if v != counts["sev"].iloc[-1] else f"{int(c):,} {missing}"
             for v, c in zip(counts["sev"], counts["count"]) if c]
    return f"{label} of {len(values):,} rows: " + ", ".join(parts) + "."


def agreement_text(matrix: pd.DataFrame) -> str:
    """Of :func:`~explain_core.views.compare.agreement_figure` (feature × method, True = named)."""
    named = matrix.astype(bool)
    every = [g for g in named.index if named.loc[g].all()]
    parts = [f"{m} names {join_words([g for g in named.index if named.loc[g, m]]) or 'no feature'}"
             for m in named.columns]
    both = f" Every method names {join_words(every)}." if every else " No feature is named by every method."
    return "; ".join(parts) + "." + both


def attribution_text(groups: Sequence[str], values: dict[str, Sequence[float]]) -> str:
    """Of :func:`~explain_core.views.compare.attribution_figure`: each method's largest attributions."""
    parts = [f"{m}: {_ranked(pd.Series(np.abs(v), index=list(groups)), fmt=format_number)} (absolute values)"
             for m, v in values.items()]
    return "Largest attributions — " + "; ".join(parts) + "."


def waterfall_text(groups: Sequence[str], values: Sequence[float], base_value: float) -> str:
    """Of :func:`~explain_core.views.compare.waterfall_figure`: from the base value to the prediction."""
    steps = pd.Series(np.asarray(values, dtype=float), index=list(groups))
    up, down = steps[steps > 0], steps[steps < 0]
    return (f"SHAP from the base value {format_number(base_value)} to {format_number(base_value + steps.sum())}: "
            f"pushed up most by {_ranked(up) or 'no feature'}, down most by "
            f"{_ranked(-down, fmt=lambda v: format_number(-v)) or 'no feature'}.")


def sankey_text(transitions: pd.DataFrame, label: str = "SEV⁺") -> str:
    """Of :func:`~explain_core.views.sparse.sev_sankey`: rows per (before, after) pair, the largest first."""
    flows = transitions.groupby(["before", "after"]).size().sort_values(ascending=False, kind="stable")
    parts = [f"{n:,} from {b} to {a}" for (b, a), n in flows.head(4).items()]
    same = int((transitions["before"] == transitions["after"]).sum())
    return (f"Each test row's {label} before → after ({len(transitions):,} rows, {same:,} unchanged): "
            + ", ".join(parts) + ("" if len(flows) <= 4 else f", and {len(flows) - 4} smaller flows") + ".")


def history_text(history: Sequence[dict]) -> str:
    """Of :func:`~explain_core.views.sparse.history_figure`: the loss terms at the first and last epoch."""
    frame = pd.DataFrame(list(history))
    first, last = frame.iloc[0], frame.iloc[-1]
    return (f"Loss per epoch over {len(frame)} epochs: total from {first['total']:.3f} to {last['total']:.3f}, BCE "
            f"from {first['bce']:.3f} to {last['bce']:.3f}, ℓ_SEV from {first['sev']:.3f} to {last['sev']:.3f}.")
