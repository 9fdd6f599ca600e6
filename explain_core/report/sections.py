"""The PDF's sections, in reading order: the summary (the row, the model, headline numbers, every parameter),
SEV, LENS, the linear explanations, the agreement matrix and the appendix of definitions. Each writes plain
sentences first and every headline number as text, so the report can be read (and checked) without images.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..analysis import lens_searches
from ..setup import lens_max_size
from ..sev.readings import SHOWN_FIRST, explanation_lines, line_sentence, summary_sentence
from ..sev.exact_sev import BUDGET_UNIT
from ..views.readings import (counterfactual_reading, decision_sentence, engine_sentence, lemma4_sentence,
                              linear_reading)
from ..vocabulary import (DEFINITIONS, METHOD_LABELS, PAPERS, TEST_ROWS_WORDS, UNCHANGED, factor_text, fmt_cost,
                                fmt_metric, fmt_p, fmt_ps, fmt_weight, format_number, format_value, join_words,
                                metrics_caveat)
from ..methods import BUDGET_CONTROL, smallest_factor
from .build import RowReport
from .model_sections import threshold_fact, two_models_table

if TYPE_CHECKING:
    from .writer import Images, Writer

SEV_COLUMNS_PER_TABLE = 5  # explanations per table when features are rows (wide data)
SEV_MAX_EXPLANATIONS = 20  # minimal explanations listed per SEV kind
LENS_MAX_FACTORS = 30  # factors listed in the LENS table


def summary(w: Writer, r: RowReport) -> None:
    """The first page: the row and its prediction in words, the headline numbers, the data and model, the row beside
    the reference and every parameter."""
    s = r.setup
    w.h1(r.title)
    w.note(f"Explanation report · created {r.created:%Y-%m-%d %H:%M %Z}".rstrip() + f" · dataset {s.dataset.name} · "
           f"model {s.model.name}")
    w.text(decision_sentence(s, f"{_where(r)} of the {s.dataset.name} data", r.score), size=10)
    if r.reading:
        w.text(r.reading, size=10, style="B")
    headline_numbers(w, r)
    data_and_model(w, r)
    if r.sparsity is not None:
        sparse_training(w, r)
    if r.models is not None:
        two_models_table(w, r)
    row_and_reference(w, r)
    parameters_table(w, r)


def _where(r: RowReport) -> str:
    """``row 42`` or ``a custom row``, with a note when the what-if editor changed its values."""
    where = f"row {r.row}" if r.row is not None else "a custom row"
    return where + (" (values edited in the what-if editor)" if r.edited else "")


def headline_numbers(w: Writer, r: RowReport) -> None:
    s, h = r.setup, r.headline
    w.h2("Headline numbers")
    rows = [["Prediction", f"{h.prediction} ({s.score_text(r.score, digits=3)})", "the model's output for this row"]]
    if r.sev is not None:
        rows.append(["SEV⁻", h.sev_minus, "fewest features that, set to the reference, flip the prediction"])
        rows.append(["SEV⁺", h.sev_plus, "fewest features that, moved from the reference to this row's values, "
                                            "give this prediction"])
        if r.sev.restricted is not None:
            rows.append(["SEV®", h.sev_restricted, f"SEV⁻ with {', '.join(s.restricted)} held fixed"])
    if r.lens is not None:
        ps = f" (PS = {h.lens_ps})" if h.lens_ps else ""
        rows.append(["Smallest LENS factor", h.lens_smallest_factor + ps,
                     f"τ-minimal sufficient factor, {r.lens.direction.upper()}, τ = {r.params.tau:g}"])
    if r.linear is not None:
        method = h.linear_method
        rows.append([f"Linear support ({method})", ", ".join(h.linear_support) or "bias only",
                     f"features with a non-zero weight, k = {r.params.k}"])
    if h.most_named is not None:
        names, count, total = h.most_named
        rows.append(["Named by most methods", ", ".join(names), f"{count} of {total} methods"])
    w.table(["Quantity", "Value", "Meaning"], rows, widths=(38, 62, 80))


def data_and_model(w: Writer, r: RowReport) -> None:
    s = r.setup
    data, model = s.dataset, s.model
    card = data.card or {}
    w.h2("Data and model")
    metrics = s.metrics or {}
    if data.task == "classification":
        perf = (f"test accuracy {metrics.get('test_accuracy', float('nan')):.3f}, test AUC "
                f"{metrics.get('test_auc', float('nan')):.3f} (train {metrics.get('train_accuracy', float('nan')):.3f}"
                f" / {metrics.get('train_auc', float('nan')):.3f})")
    else:
        perf = (f"test R² {metrics.get('test_r2', float('nan')):.3f}, "
                f"test RMSE {format_number(metrics.get('test_rmse', float('nan')))}"
                f" (train R² {metrics.get('train_r2', float('nan')):.3f})")
    positive = (f"; positive class {data.positive_class}" + (f" = {card['positive_class_label']}"
                                                             if card.get("positive_class_label") else "")
                if data.task == "classification" else "")
    split = "test" if r.row is not None and r.row in set(np.asarray(s.test_rows).tolist()) else \
        "training" if r.row is not None else "not in the data"
    info = [
        ["Dataset", f"{data.name}" + (f" — {card['title']}" if card.get("title") else "")],
        ["Size", f"{len(data.features):,} rows, {len(data.groups)} features ({len(data.columns)} columns); "
                 f"target {data.target.name} ({data.task}{positive})"],
        ["Model", s.source if model.name in s.source else f"{model.name}; {s.source}"],  # a source names it
        ["Performance", f"{perf}; {len(s.train_rows):,} training / {len(s.test_rows):,} test rows: "
                        f"{TEST_ROWS_WORDS.get(metrics.get('test_rows', 'split'))}. {metrics_caveat(metrics)}".strip()],
        ["Score", f"{s.score_text(r.score, digits=3)}; label 1 by {model.rule}"], *threshold_fact(s),
        ["Reference", s.reference_of_label(r.label).description],
        ["Restricted features", ", ".join(s.restricted) or "none"],
        ["Row", f"{_where(r)} ({split} row)"],
    ]
    w.table(["", ""], info, widths=(32, 148))


def row_and_reference(w: Writer, r: RowReport) -> None:
    s, data = r.setup, r.setup.dataset
    w.h2("The row and the reference")
    query = s.dataset.layout.values(r.query.iloc[0].to_dict())
    ref = s.dataset.layout.values(s.reference_of_label(r.label).values)
    rows = [[g.name, g.kind, format_value(query[g.name]), format_value(ref[g.name]),
             "yes" if g.name in s.restricted else ""] for g in data.groups]
    w.table(["Feature", "Kind", "This row", "Reference", "Restricted"], rows, widths=(60, 22, 38, 38, 22))


def parameters_table(w: Writer, r: RowReport) -> None:
    s = r.setup
    w.h2("Parameters (enough to reproduce every number)")
    p = r.params
    lens_size = lens_max_size(s, p)
    rows = [
        ["SEV engine", p.sev_method, "auto: exact (CP-SAT, sorting) for tree and additive models on wide data"],
        ["SEV maximum depth", p.max_depth, "SEV⁻/SEV⁺/SEV® breadth-first search depth"],
        ["SEV exact budget", f"{p.sev_budget:g}", f"per search (exact engine): {BUDGET_UNIT}"],
        ["LENS context", p.lens_direction.upper(), "R2I: reference → input; I2R: input → reference"],
        ["LENS references", p.lens_references, "training rows predicted the opposite class, drawn with the seed"],
        ["LENS τ", f"{p.tau:g}", "sufficiency threshold: PS ≥ τ"],
        ["LENS α", "none (exact mode: PS ≥ τ)" if p.alpha is None else f"{p.alpha:g}",
         "one-sided binomial test of H0: PS < τ"],
        ["LENS maximum factor size",
         f"layered search, budget {p.lens_budget_rows:,} model rows" if lens_searches(s, p) else
         f"{lens_size}" + (" (all subsets)" if p.lens_max_size is None else ""),
         "factors of at most this many features (wide data: sizes 0, 1, … until one holds a sufficient factor)"],
        ["LENS correction", p.lens_correction, "binomial-test mode: Holm = family-wise over the factors of the row"],
        ["Linear σ", f"{p.sigma:g}", "concentration of the neighbourhood D_{x,σ}"],
        ["Linear k", p.k, "sparsity budget ‖w‖₀ ≤ k (bias included)"],
        ["Linear m", p.m, "samples of D_{x,σ} the explainers are fitted on"],
        ["Linear methods", p.linear_method, "IHT, the exact MIP fit or both, beside LIME and SHAP"],
        ["Exact fit time limit", f"{p.time_limit:g} s", "after it the MIP reports its gap instead of optimal"],
        ["LIME samples", p.lime_samples, "LIME tabular perturbations (agreement section)"],
        ["SHAP background", p.shap_background, "background rows for SHAP (agreement section)"],
        ["Seed", p.seed, "every random draw: LENS references, samples, LIME, SHAP, typical cases, DiCE"],
        ["SEV^F window τ, values k", f"{p.flex_tau:g}, {p.flex_k}", "flexible reference: ±τ quantile rank, k values"],
        ["Typical cases K", "auto (medoid silhouette)" if p.clusters is None else p.clusters, "SEV^© clusters"],
        ["Credible threshold", "off" if p.credible is None else f"{p.credible:g}",
         "credible search: lowest credibility percentile accepted"],
        ["DiCE", f"{p.dice_method}, {p.dice_count} counterfactuals", "dice-ml's model-agnostic search"],
    ]
    w.table(["Parameter", "Value", "Meaning"], rows, widths=(44, 42, 94))
    w.note("Software: " + _versions())


def sparse_training(w: Writer, r: RowReport) -> None:
    """How the model was trained for sparse explanations (SEV §4) and the base model beside it on the test rows."""
    origin = r.setup.training
    t = origin.result.settings
    w.h2("Trained for sparse explanations")
    w.text(f"This model was trained on the Sparser model page from {origin.result.base_name}: objective {t.label}, "
           f"λ = {t.strength:g}, C₂ = {t.pos_base_strength:g}, θ = {t.theta:g}; {t.warmup_epochs} warm-up epochs and "
           f"{t.sev_epochs} with the SEV term, batches of {t.batch_size}, Adam at learning rate {t.learning_rate:g}, "
           f"seed {t.seed}" + (f"; restricted: {', '.join(t.restricted)}" if t.restricted else "") + ".")
    table = r.sparsity.table()
    rows = [[name, fmt_metric(row["before"]), fmt_metric(row["after"])] for name, row in table.iterrows()]
    w.table(["Quantity", "Base model", "This model"], rows, widths=(100, 40, 40))


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version
    import platform

    parts = [f"Python {platform.python_version()}"]
    for package in ("numpy", "pandas", "scikit-learn", "scipy", "shap", "lime", "ortools", "torch"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            continue
    return ", ".join(parts) + "."


def _breakable(name: str) -> str:
    """A column heading that may wrap after underscores (a zero-width space follows each)."""
    return str(name).replace("_", "_\u200b")


def _sev_table(w: Writer, r: RowReport, which: str) -> None:
    """The paper's table (Fig. 1c/1d): Query, one line per minimal explanation (moved features only), Reference.

    Up to 8 features: features are columns, as in the paper. Wider data: features are rows, only those some listed
    explanation moves (every value is in the summary's row/reference table), a few explanations per table.
    At most ``SEV_MAX_EXPLANATIONS`` explanations are listed; the count of the others is given.
    """
    ex = r.sev
    result = ex.result(which)
    table = ex.table(which, unchanged=UNCHANGED)
    direction = ("features moved from this row to the reference" if result.kind == "minus"
                 else "features moved from the reference to this row's values")
    w.text(f"{result.label} explanations ({direction}; {UNCHANGED} = unchanged): {result.message}.", size=8.5,
           style="B", gap=0.8)
    cells = table.map(format_value)
    ends = [cells.index[0], cells.index[-1]]
    middle = list(cells.index[1:-1])
    listed = middle[:SEV_MAX_EXPLANATIONS]
    if len(table.columns) <= 8:
        first = 24
        rest = (w.pdf.epw - first) / len(table.columns)
        rows = [[label] + list(cells.loc[label]) for label in [ends[0], *listed, ends[1]]]
        w.table(["", *(_breakable(c) for c in cells.columns)], rows, widths=(first,) + (rest,) * len(table.columns),
                align=("LEFT",) + ("CENTER",) * len(table.columns), size=7)
    else:
        chunks = [listed[i:i + SEV_COLUMNS_PER_TABLE] for i in range(0, len(listed), SEV_COLUMNS_PER_TABLE)] or [[]]
        for chunk in chunks:
            moved = [g for g in cells.columns if any(cells.at[e, g] != UNCHANGED for e in chunk)]
            shown = cells.loc[[ends[0], *chunk, ends[1]], moved or list(cells.columns)].T
            first = 50
            rest = (w.pdf.epw - first) / len(shown.columns)
            rows = [[g] + list(shown.loc[g]) for g in shown.index]
            heads = [str(c).replace("Explanation ", "Expl. ") for c in shown.columns]
            w.table(["Feature", *heads], rows, widths=(first,) + (rest,) * len(shown.columns),
                    align=("LEFT",) + ("CENTER",) * len(shown.columns), size=7)
        w.note(f"Only the features these explanations move are shown; all {len(cells.columns)} values of the row and "
               "the reference are in the summary.")
    if len(middle) > len(listed):
        w.note(f"{len(middle) - len(listed)} more minimal explanations of the same size are not listed "
               f"({len(middle)} in all; the app's SEV page and its JSON export list every one).")


def _sev_words(w: Writer, r: RowReport, which: str) -> None:
    """The explanations of one SEV value in words (moved features only, strongest first), capped with the count."""
    result = r.sev.result(which)
    lines = explanation_lines(r.sev, which, r.setup.model.threshold)
    if not lines:
        return
    summary = summary_sentence(result, lines, control=BUDGET_CONTROL)
    w.text(summary if summary.startswith(result.label) else f"{result.label}: {summary}", size=9, style="B", gap=0.6)
    for line in lines[:SHOWN_FIRST]:
        w.text(f"•  {line_sentence(line, result, r.setup.class_names, r.setup.score_text)}", size=8.5, gap=0.4)
    if len(lines) > SHOWN_FIRST:
        w.note(f"… and {len(lines) - SHOWN_FIRST} more ({len(lines)} in all; the tables below list up to "
               f"{SEV_MAX_EXPLANATIONS}).")


def sev_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    ex = r.sev
    w.h1(f"{number}. SEV — sparse explanation values")
    w.text(r.reading, size=10, style="B")
    kinds = list(ex.results())
    rows = [[res.label, res.shown, len([e for e in res.explanations if e]), res.message]
            for res in ex.results().values()]
    w.table(["", "Value", "Minimal explanations", "Outcome"], rows, widths=(16, 18, 32, 114),
            align=("LEFT", "CENTER", "CENTER", "LEFT"))
    w.note(f"The reference is the {r.setup.reference_of_label(r.label).description}. "
           "SEV⁻ counts features moved from this row to "
           f"the reference until the prediction flips; SEV⁺ counts features moved from the reference to this row's "
           f"values until the prediction is this row's; search depth {ex.minus.max_depth}.")
    w.note(" ".join(f"{res.label}: {engine_sentence(res)}" for res in ex.results().values()))
    for k in kinds:
        _sev_words(w, r, k)
    for k in kinds:
        _sev_table(w, r, k)
    shown = ex.result(r.sev_shown)
    if r._cube_drawn:
        caption = (f"The SEV hypercube: each dot mixes this row and the reference (x = features at the reference), "
                   f"coloured by predicted class; orange edges are the shortest flipping paths of {shown.label}.")
    else:
        caption = (f"With {len(r.setup.dataset.groups)} features the hypercube is summarised by depth: vertices "
                   f"the {shown.label} search evaluated and how many flip the prediction.")
    images.draw(w, "sev", caption)


def lens_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    lens, s, p = r.lens, r.setup, r.params
    result = lens.factors
    names = s.class_names
    w.h1(f"{number}. LENS — necessity and sufficiency")
    if lens.direction == "r2i":
        context = (f"Context R2I (reference → input): each of the references gets a factor's features set to this "
                   f"row's values; PS is the share that then gets this row's prediction {names[result.outcome]}.")
    else:
        context = (f"Context I2R (input → reference): this row gets a factor's features set to each reference's "
                   f"values; PS is the share of references for which the prediction becomes {names[result.outcome]}.")
    mode = "exact mode: PS ≥ τ" if result.alpha is None else f"binomial test at α = {result.alpha:g} (H0: PS < τ)"
    w.text(context, size=9)
    for line in (lens.note, result.error_rate if result.alpha is not None else "", result.limit or ""):
        if line:
            w.text(line, size=9)
    w.text(f"References: {p.lens_references} training rows predicted the opposite class (seed {p.seed}); factors of "
           f"up to {lens.max_size} features; τ = {result.tau:g}, {mode}. {len(result.factors)} τ-minimal factor"
           f"{'s' if len(result.factors) != 1 else ''}; cumulative PN of their upward closure = "
           f"{fmt_ps(result.cumulative_pn)}.", size=9)
    best = smallest_factor(lens)
    if best is not None:
        if lens.direction == "r2i":
            moved = join_words(best.groups) if best.groups else "no feature"
            reading = (f"Setting {moved} to this row's values gives {best.ps:.0%} of the references the prediction "
                       f"{names[result.outcome]} (PS = {fmt_ps(best.ps)}).")
        else:
            given = join_words(best.groups) if best.groups else "nothing"
            reading = (f"Giving this row a reference's {given} changes the "
                       f"prediction to {names[result.outcome]} for {best.ps:.0%} of the references "
                       f"(PS = {fmt_ps(best.ps)}).")
        w.text(reading, size=9.5, style="B")
    else:
        w.text(f"No factor of up to {lens.max_size} features reaches PS ≥ τ = {result.tau:g}.", size=9.5, style="B")
    limit = LENS_MAX_FACTORS
    rows = [[factor_text(f.groups), len(f.groups), fmt_ps(f.ps), f"{f.hits}/{f.samples}", fmt_p(f.p_value),
             fmt_cost(f.cost)] for f in result.factors[:limit]]
    if rows:
        w.table(["τ-minimal factor", "Size", "PS", "Hits / samples", "p-value", "Cost"], rows,
                widths=(86, 12, 16, 26, 20, 20), align=("LEFT", "CENTER", "RIGHT", "RIGHT", "RIGHT", "RIGHT"))
    if len(result.factors) > limit:
        w.note(f"The first {limit} of {len(result.factors)} factors are listed (by size).")
    recourse = sorted(lens.recourse.factors, key=lambda f: f.cost)[:5]
    if recourse:
        w.text("Cheapest factors (cost order, §5.3: L1 distance scaled by MAD, 1 per changed categorical feature):",
               size=8.5, style="B", gap=0.8)
        rows = [[factor_text(f.groups), fmt_ps(f.ps), fmt_cost(f.cost),
                 "—" if f.reference is None else str(f.reference)] for f in recourse]
        w.table(["Factor", "PS", "Cost", "Cheapest reference (row)"], rows, widths=(96, 20, 20, 44),
                align=("LEFT", "RIGHT", "RIGHT", "RIGHT"))
    taus = lens.pn_curve["tau"]
    images.draw(w, "lens", f"Cumulative probability of necessity of the τ-minimal factors for τ = "
                           f"{taus.min():g}–{taus.max():g} (the same sweep as the LENS page).")


def linear_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    lin = r.linear
    comp = lin.comparison
    w.h1(f"{number}. Anchored k-sparse linear explanations")
    w.text(linear_reading(r.setup, lin, [m for m in ("iht", "exact") if m in lin.weights().columns]), size=10,
           style="B")
    w.text(f"Each literal reads “keeps <feature> = <value>”: z_j = +1 keeps this row's value, z_j = −1 moves the "
           f"feature to the reference (the SEV hypercube). The model's output on the [−1, +1] scale is f(x) = "
           f"{lin.fx:.4f}; an anchored explanation satisfies w·x = f(x). k = {comp.k}, σ = {comp.sigma:g}, "
           f"m = {comp.m}, seed {comp.seed}; all methods are fitted on the same sample.", size=9)
    weights = lin.weights()
    methods = list(weights.columns)
    rows = [[literal] + [fmt_weight(weights.at[literal, m]) for m in methods] for literal in weights.index]
    first = 62
    rest = (w.pdf.epw - first) / len(methods)
    w.table(["Literal", *[METHOD_LABELS.get(m, m) for m in methods]], rows,
            widths=(first,) + (rest,) * len(methods), align=("LEFT",) + ("RIGHT",) * len(methods), size=7.5)
    table = comp.table()
    rows = []
    for m in table.index:
        t = table.loc[m]
        rel = fmt_metric(t["relevance"])
        rel += "" if t["relevance_method"] in ("exact",) else f" ({t['relevance_method']})"
        rows.append([METHOD_LABELS.get(m, m), fmt_metric(t["fidelity"]), fmt_metric(t["empirical_fidelity"]), rel,
                     fmt_metric(t["anchoring_gap"]), int(t["support_size"]), fmt_metric(t["bound"]),
                     str(t["detail"]) or "—"])
    w.table(["Method", "Fidelity F", "F̂ (fit)", "Relevance R", "Anchoring gap", "‖w‖₀", "Bound", "Status"], rows,
            widths=(24, 18, 18, 28, 20, 12, 18, 42),
            align=("LEFT", "RIGHT", "RIGHT", "RIGHT", "RIGHT", "CENTER", "RIGHT", "LEFT"), size=7.5)
    w.note("F, F̂ and R as defined in the appendix; anchoring gap |w·x − f(x)|; "
           + lemma4_sentence(comp.bound_coverage(), comp.k, comp.sigma)
           + " Status: the exact fit's solver status (optimal = certified) or IHT's iterations.")
    images.draw(w, "linear", "The weights of each explainer (literals every method leaves at 0 are not drawn).")


def agreement_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    ag = r.agreement
    w.h1(f"{number}. Agreement across methods")
    matrix = ag.matrix()
    counts = ag.counts()
    methods = list(matrix.columns)
    rows = [[g] + ["✓" if matrix.at[g, m] else "" for m in methods] + [int(counts[g])] for g in matrix.index]
    first = 48
    rest = (w.pdf.epw - first - 14) / max(1, len(methods))
    w.table(["Feature", *methods, "Total"], rows, widths=(first,) + (rest,) * len(methods) + (14,),
            align=("LEFT",) + ("CENTER",) * (len(methods) + 1), size=7.5)
    w.text("How each method's set is read:", size=8.5, style="B", gap=0.5)
    for method, rule in ag.rules.items():
        w.text(f"• {method}: {rule}", size=8, gap=0.3)
    images.draw(w, "agreement")


COUNTERFACTUAL_MAX_POINTS = 20


def counterfactual_section(w: Writer, r: RowReport, number: int, images: Images) -> None:
    """SEV against each kind of reference beside DiCE, every method with the same metrics."""
    c = r.counterfactuals
    summary = c.summary()
    w.h1(f"{number}. Counterfactuals side by side")
    w.text(counterfactual_reading(summary), size=10, style="B")
    held = f" Held fixed by every method: {', '.join(c.restricted)}." if c.restricted else ""
    w.text("ℓ0 = features changed; ℓ∞ / ℓ1 = the largest / summed numeric change in standard deviations of the "
           "other class's training rows; credibility = the share of real cases of that class less typical than the "
           f"point; seconds = the method's time for this row (DiCE: {c.dice_method}, {c.dice_count} counterfactuals, "
           f"seed {c.seed}).{held}", size=9)
    rows = [[name, int(m["points"]), _num(m["ℓ0"]), _num(m["ℓ∞ (SD)"]), _num(m["ℓ1 (SD)"]),
             _percent(m["credibility"]), f"{m['seconds']:.3f}"]
            for name, m in summary.iterrows()]
    w.table(["Method", "Points", "ℓ0", "ℓ∞ (SD)", "ℓ1 (SD)", "Credibility", "Seconds"], rows,
            widths=(40, 16, 18, 26, 26, 26, 28), align=("LEFT",) + ("RIGHT",) * 6, size=8)
    points = c.table().head(COUNTERFACTUAL_MAX_POINTS)
    rows = [[m, str(p), feats, int(l0), _num(li), _percent(cr)]
            for m, p, feats, l0, li, cr in points[["method", "point", "features changed", "ℓ0", "ℓ∞ (SD)",
                                                   "credibility"]].itertuples(index=False)]
    if rows:
        w.table(["Method", "#", "Features changed", "ℓ0", "ℓ∞ (SD)", "Credibility"], rows,
                widths=(32, 8, 86, 12, 20, 22), align=("LEFT", "RIGHT", "LEFT", "RIGHT", "RIGHT", "RIGHT"), size=7.5)
    notes = [f"{name}: {m['note']}" for name, m in summary.iterrows() if m["note"]]
    for note in notes:
        w.note(note)
    images.draw(w, "counterfactuals", "Each method's points: the largest numeric change against credibility; the "
                                      "number on a marker is the count of features changed.")


def _num(value) -> str:
    return "n/a" if value is None or np.isnan(value) else format_number(round(float(value), 3))


def _percent(value) -> str:
    return "n/a" if value is None or np.isnan(value) else f"{value:.0%}"


def appendix(w: Writer, r: RowReport) -> None:
    w.h1("Appendix — definitions and sources")
    for name, text in DEFINITIONS:
        w.term(name, text)
    w.h2("Papers")
    for key in ("sev", "lens", "ple", "lime", "shap", "ids", "dice"):
        w.text(PAPERS[key], size=8, gap=1)
