"""The report's content: :class:`RowReport` gathers one row's results (the same :mod:`explain_core.analysis` calls
as the app's pages, or the app's own cached results passed in), their figures, the :class:`Headline` numbers and
the plain-language SEV reading.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analysis import (Agreement, Baselines, LensReport, Parameters, Setup, agreement, row_baselines,
                        row_counterfactuals, row_lens, row_linear, row_sev, score_of)
from ..counterfactuals import CounterfactualComparison
from ..errors import IntakeError
from ..inspection.dependence import PartialDependence
from ..inspection.interactions import Interactions
from ..inspection.two_models import ModelComparison, compare_models
from ..sev.engine import Hypercube, SEVExplanation, hypercube
from ..sparse.compare import SparsityComparison
from ..views.compare import agreement_figure
from ..views.dependence import dependence_figure
from ..views.lens import pn_curve_figure
from ..views.linear import weights_figure
from ..views.readings import sev_reading
from ..views.references import points_figure
from ..views.sev import HYPERCUBE_FIGURE_MAX_GROUPS, hypercube_figure, lattice_figure
from ..vocabulary import METHOD_LABELS, factor_text, fmt_ps, format_number
from .cohorts import CohortsPart, cohort_figures
from .dependence import CONTENTS as dependence_contents, report_dependence, report_interactions, sev_feature

if TYPE_CHECKING:
    from ..linear.compare import LinearExplanation

BUDGET_CONTROL = "the SEV search budget (sev_budget_rows, among the parameters)"  # what narrows a bracket here
SECTIONS = ("sev", "lens", "linear", "agreement", "counterfactuals", "dependence", "appendix")
"""A report's sections, in the order they are laid out."""
SECTION_TITLES = {"sev": "SEV", "lens": "LENS", "linear": "Linear", "agreement": "Agreement",
                  "counterfactuals": "Counterfactuals", "dependence": "Dependence", "appendix": "Appendix"}
"""Each section's title."""
INDEX_COLUMNS = ("row", "prediction", "score", "sev_minus", "sev_plus", "sev_restricted", "lens_smallest_factor",
                 "lens_ps", "linear_support", "pdf")
"""The columns of a batch's ``index.csv`` (the headline numbers of each report)."""


@dataclass(frozen=True)
class Headline:
    """The numbers a reader sees first (and the batch index lists): the prediction, SEV⁻/SEV⁺/SEV® as shown,
    the smallest LENS factor with its PS, the linear support and which features most methods name.

    Parameters
    ----------
    row : int, optional
        The dataset position.
    prediction : str
        The prediction in words.
    score : float
        The model's score.
    sev_minus, sev_plus, sev_restricted : str
        SEV⁻, SEV⁺ and SEV® as shown.
    lens_smallest_factor, lens_ps : str
        The smallest LENS factor and its PS.
    linear_method : str
        Whose support is shown.
    linear_support : tuple of str
        The linear support.
    most_named : tuple, optional
        The features most methods name, how many name them, of how many.
    """

    row: int | None
    prediction: str
    score: float
    sev_minus: str = ""
    sev_plus: str = ""
    sev_restricted: str = ""
    lens_smallest_factor: str = ""
    lens_ps: str = ""
    linear_method: str = ""
    linear_support: tuple[str, ...] = ()
    most_named: tuple[tuple[str, ...], int, int] | None = None  # (features, methods naming them, methods)


@dataclass
class RowReport:
    """Everything one row's report shows: the results, the figures (plotly, one data object per chart), the
    headline numbers and the plain-language SEV reading. ``row`` is the dataset position (None for a row
    that is not in the data); ``edited`` marks a row changed in the app's what-if editor.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    query : pandas.DataFrame
        The row.
    row : int, optional
        Its dataset position.
    params : Parameters
        Every parameter.
    sections : tuple of str
        The sections shown.
    created : datetime.datetime
        When it was built.
    score : float
        The model's score.
    label : int
        Its label.
    edited : bool
        Changed in the what-if editor.
    sev, baselines, lens, linear, agreement, sparsity, counterfactuals, dependence, cohorts, models, interactions
        The results shown (None: not in the report).
    figures : dict of str to plotly.graph_objects.Figure
        The figures.
    headline : Headline, optional
        The headline numbers.
    reading : str
        The SEV reading.
    """

    setup: Setup
    query: pd.DataFrame
    row: int | None
    params: Parameters
    sections: tuple[str, ...]
    created: datetime
    score: float
    label: int
    edited: bool = False
    sev: SEVExplanation | None = None
    baselines: Baselines | None = None
    lens: LensReport | None = None
    linear: LinearExplanation | None = None
    agreement: Agreement | None = None
    figures: dict[str, go.Figure] = field(default_factory=dict)
    headline: Headline | None = None
    sparsity: SparsityComparison | None = None  # before/after, when the model was trained on the Sparser page
    reading: str = ""
    counterfactuals: CounterfactualComparison | None = None  # SEV's kinds of reference beside DiCE
    dependence: PartialDependence | None = None  # PDP and ICE of the row's leading feature (report/dependence.py)
    cohorts: CohortsPart | None = None  # the Cohorts & fairness page's results, when it computed any
    models: ModelComparison | None = None  # a second model beside this one (explain_core.inspection.two_models)
    interactions: Interactions | None = None  # the model's strongest pairs, in the dependence section

    @property
    def title(self) -> str:
        where = f"row {self.row}" if self.row is not None else "a custom row"
        if self.setup.dataset.task == "regression":  # explained against the model's threshold
            side = "at or above" if self.label == 1 else "below"
            return (f"Why is the predicted {self.setup.dataset.target.name} {side} the threshold "
                    f"{format_number(self.setup.model.threshold)} for {where}?")
        return f"Why did the model predict {self.setup.class_names[self.label]} for {where}?"

    @property
    def file_name(self) -> str:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(self.setup.dataset.name))
        return f"{name}_row{self.row if self.row is not None else 'custom'}{'_edited' if self.edited else ''}.pdf"

    @property
    def sev_shown(self) -> str:
        """Which SEV result the reading and the figure use: SEV® when features are restricted, else SEV⁻."""
        return "restricted" if self.sev is not None and self.sev.restricted is not None else "minus"

    def contents(self) -> list[tuple[str, list[str]]]:
        """The report's parts in order, each with what it holds (for a preview), numbered as in the PDF.

        Returns
        -------
        list of (str, list of str)
            Each part's title and its contents.
        """
        kinds = "SEV⁻ / SEV⁺" + (" / SEV®" if self.sev is not None and self.sev.restricted is not None else "")
        described = {
            "sev": ("SEV", [f"{kinds} with their minimal explanations (the paper's tables)",
                            "the plain-language reading",
                            "the hypercube" if self._cube_drawn else "the search by depth (lattice view)"]),
            "lens": ("LENS", ["τ-minimal factors with PS and p-values", "the cheapest (cost-order) factors",
                              "cumulative PN against τ"]),
            "linear": ("Linear", ["weights of IHT / exact / LIME / SHAP side by side",
                                  "fidelity, relevance, anchoring gap, optimality status", "weights chart"]),
            "agreement": ("Agreement", ["feature × method matrix", "how each method's set was read"]),
            "counterfactuals": ("Counterfactuals", [("SEV against one reference, a flexible one and typical cases "
                                                     "beside DiCE's counterfactuals"),
                                                    "ℓ0, ℓ∞, ℓ1, credibility and seconds for every method",
                                                    "where each point lands"]),
            "dependence": dependence_contents,
        }
        trained = ["how the model was trained for sparse explanations, before vs after"] if self.sparsity else []
        trained += ["a second model beside this one: metrics, disagreements, this row"] if self.models else []
        parts = [("Summary", ["title, date, dataset, model and its test metrics", *trained,
                              "the row's values and prediction, the reference, restricted features",
                              "headline numbers", "every parameter and seed"])]
        numbered = [described[s] for s in SECTIONS if s in described and s in self.sections]
        parts += [(f"{i}. {title}", items) for i, (title, items) in enumerate(numbered, 1)]
        if self.cohorts is not None:
            parts.append((f"{len(numbered) + 1}. Cohorts and fairness", self.cohorts.contents()))
        if "appendix" in self.sections:
            parts.append(("Appendix", ["definitions", "papers cited"]))
        return parts

    @property
    def _cube_drawn(self) -> bool:
        return len(self.setup.dataset.groups) <= HYPERCUBE_FIGURE_MAX_GROUPS

    def json_files(self) -> dict[str, str]:
        """Each result of the report as the app's JSON download (``<pdf name>.<part>.json``: the result's own
        ``to_json`` with the row, the setup and the parameters beside it).

        Returns
        -------
        dict of str to str
            File name → JSON text.
        """
        stem = self.file_name.removesuffix(".pdf")
        parts = {"sev": self.sev, "lens": self.lens, "linear": self.linear, "baselines": self.baselines,
                 "agreement": self.agreement, "dependence": self.dependence, "interactions": self.interactions}
        return {f"{stem}.{part}.json": result.to_json(row=self.row, setup=self.setup, parameters=self.params)
                for part, result in parts.items() if result is not None}

    def index_row(self, pdf: str = "") -> dict:
        """The headline numbers as one row of the batch index (see :data:`INDEX_COLUMNS`).

        Parameters
        ----------
        pdf : str
            The PDF's file name.

        Returns
        -------
        dict
            The index row.
        """
        h = self.headline
        return {"row": self.row, "prediction": h.prediction, "score": round(self.score, 6),
                "sev_minus": h.sev_minus, "sev_plus": h.sev_plus, "sev_restricted": h.sev_restricted,
                "lens_smallest_factor": h.lens_smallest_factor, "lens_ps": h.lens_ps,
                "linear_support": "; ".join(h.linear_support), "pdf": pdf}


def needed_results(sections: Iterable[str]) -> set[str]:
    """Which results a set of sections needs (``sev``, ``lens``, ``linear``, ``baselines``).

    Parameters
    ----------
    sections : iterable of str
        Report sections.

    Returns
    -------
    set of str
        The results to compute.

    Raises
    ------
    IntakeError
        When a section is unknown.
    """
    sections = set(check_sections(sections))
    need = {s for s in ("sev", "lens", "linear", "counterfactuals") if s in sections}
    if "agreement" in sections:
        need |= {"sev", "lens", "linear", "baselines"}
    return need


def check_sections(sections: Iterable[str]) -> tuple[str, ...]:
    """The report sections asked for, checked and in report order.

    Parameters
    ----------
    sections : iterable of str
        Names from :data:`SECTIONS`.

    Returns
    -------
    tuple of str
        The sections, in :data:`SECTIONS` order.

    Raises
    ------
    IntakeError
        When a name is not a section.
    """
    sections = tuple(sections)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise IntakeError(f"Unknown report sections {', '.join(map(str, unknown))}; choose from {', '.join(SECTIONS)}.")
    return tuple(s for s in SECTIONS if s in sections)


def build_row_report(setup: Setup, row: int | pd.DataFrame, params: Parameters | None = None,
                     sections: Iterable[str] = SECTIONS, *, row_position: int | None = None, edited: bool = False,
                     sev: SEVExplanation | None = None, baselines: Baselines | None = None,
                     lens: LensReport | None = None, linear: LinearExplanation | None = None,
                     cube: Hypercube | None = None,
                     counterfactuals: CounterfactualComparison | None = None,
                     dependence: PartialDependence | None = None, interactions: Interactions | None = None,
                     cohorts: CohortsPart | None = None,
                     second: Setup | None = None, models: ModelComparison | None = None) -> RowReport:
    """Gather one row's results for a report.

    ``row`` is a dataset position or a one-row frame of feature values (then ``row_position`` names its
    position, if any). Results already computed (the app's cached ones) are passed in and used as they are;
    the others are computed here with the same :mod:`explain_core.analysis` calls the app makes. ``cohorts``: the
    Cohorts & fairness page's results, shown in a section of their own; ``second``: a
    second model on the same data and split, summed up beside this one (the row's SEV under both, when the row is
    a dataset row); ``models``: that comparison already computed.

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    row : int or pandas.DataFrame
        A dataset position, or a one-row frame.
    params : Parameters, optional
        Every parameter (default: the defaults).
    sections : iterable of str
        The sections (:data:`SECTIONS`).
    row_position : int, optional
        The frame's dataset position.
    edited : bool
        Changed in the what-if editor.
    sev, baselines, lens, linear, cube, counterfactuals, dependence, interactions, cohorts, models : optional
        Results already computed.
    second : Setup, optional
        A second model on the same data and split.

    Returns
    -------
    RowReport
        Everything the row's report shows.

    Raises
    ------
    IntakeError
        When a section is unknown, or a method's parameters do not fit the setup.
    """
    params = params or Parameters()
    sections = check_sections(sections)
    if isinstance(row, pd.DataFrame):
        query, position = row.iloc[:1], row_position
    else:
        query, position = setup.query(int(row)), int(row)
    need = needed_results(sections)
    score = score_of(setup, query)
    label = int(setup.model.labels_of(np.array([score]))[0])
    sev = sev if sev is not None or "sev" not in need else row_sev(setup, query, params)
    if "lens" in need and lens is None:
        lens = row_lens(setup, query, params)
    linear = linear if linear is not None or "linear" not in need else row_linear(setup, query, params)
    baselines = baselines if baselines is not None or "baselines" not in need else row_baselines(setup, query, params)
    report = RowReport(setup, query, position, params, sections, datetime.now().astimezone(), score, label, edited,
                       sev if "sev" in need else None, baselines, lens if "lens" in need else None,
                       linear if "linear" in need else None)
    if "agreement" in sections:
        report.agreement = agreement(setup.dataset.group_names, sev=report.sev, lens=lens.factors, linear=linear,
                                     baselines=baselines)
    if "counterfactuals" in need:
        report.counterfactuals = counterfactuals or row_counterfactuals(setup, query, params)
    if "dependence" in sections:
        report.dependence = dependence or report_dependence(setup, query, position,
                                                            sev_feature(report.sev, setup.model.threshold),
                                                            params.seed)
        report.interactions = interactions or report_interactions(setup, params.seed)
    if setup.training is not None:
        report.sparsity = setup.training.comparison(setup, params.sev)
    report.cohorts = cohorts
    report.models = models or (compare_models(setup, second, position, params) if second is not None else None)
    report.figures = {**_figures(report, cube), **(cohort_figures(cohorts) if cohorts is not None else {})}
    report.headline = _headline(report)
    report.reading = sev_reading(setup, report.sev, BUDGET_CONTROL) if report.sev is not None else ""
    return report


def _figures(report: RowReport, cube: Hypercube | None) -> dict[str, go.Figure]:
    s, figs = report.setup, {}
    if report.sev is not None and "sev" in report.sections:
        which = report.sev_shown
        if report._cube_drawn:
            cube = cube or hypercube(s.model, s.dataset.layout, report.query, s.reference_of_label(report.label))
            figs["sev"] = hypercube_figure(cube, report.sev, which=which, class_names=s.class_names)
        else:
            figs["sev"] = lattice_figure(report.sev.result(which), labels_of=s.model.labels_of)
    if report.lens is not None and "lens" in report.sections:
        figs["lens"] = pn_curve_figure(report.lens.pn_curve, direction=report.lens.direction)
    if report.linear is not None and "linear" in report.sections:
        figs["linear"] = weights_figure(_weights(report.linear))
    if report.agreement is not None:
        figs["agreement"] = agreement_figure(report.agreement.matrix())
    if report.counterfactuals is not None:
        figs["counterfactuals"] = points_figure({m.method: m.points for m in report.counterfactuals.methods})
    if report.dependence is not None:
        figs["dependence"] = dependence_figure(report.dependence)
    return figs


def _weights(linear: LinearExplanation) -> pd.DataFrame:
    """The weights table with the methods' display names as columns."""
    w = linear.weights()
    return w.rename(columns=lambda m: METHOD_LABELS.get(m, m))


def linear_support_method(linear: LinearExplanation) -> str:
    """Whose support a report shows: the exact fit's when it ran, else IHT's.

    Parameters
    ----------
    linear : LinearExplanation
        The linear explanation.

    Returns
    -------
    str
        ``"exact"`` or ``"iht"``.
    """
    methods = [r.method for r in linear.comparison.results]
    return "exact" if "exact" in methods else "iht"


def smallest_factor(lens: LensReport):
    """The smallest τ-minimal factor (highest PS among equally small ones), or None.

    Parameters
    ----------
    lens : LensReport
        The row's LENS report.

    Returns
    -------
    Factor or None
        The factor.
    """
    factors = list(lens.factors.factors)
    if not factors:
        return None
    return min(factors, key=lambda f: (len(f.groups), -f.ps))


def _headline(report: RowReport) -> Headline:
    s, p = report.setup, report.params
    sev, lens, linear = report.sev, report.lens, report.linear
    h = {}
    if sev is not None:
        h.update(sev_minus=sev.minus.shown, sev_plus=sev.plus.shown,
                 sev_restricted=sev.restricted.shown if sev.restricted is not None else "")
    if lens is not None:
        best = smallest_factor(lens)
        h.update(lens_smallest_factor=factor_text(best.groups) if best else f"none at τ = {p.tau:g}",
                 lens_ps=fmt_ps(best.ps) if best else "")
    if linear is not None:
        method = linear_support_method(linear)
        h.update(linear_method=method, linear_support=linear.support_groups(method))
    if report.agreement is not None:
        h["most_named"] = report.agreement.most_named()
    return Headline(report.row, s.class_names[report.label], report.score, **h)
