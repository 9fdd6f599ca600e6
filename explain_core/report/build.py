"""The report's content: :class:`RowReport` reads one row's results from a lazy bundle
(:class:`~.bundle.RowResults`: the app's cached results, or computed on first access), with their figures, the
:class:`Headline` numbers and the plain-language SEV reading. The sections are the registered methods'
(:func:`~explain_core.registry.methods`) and the report's own: the partial dependence and the appendix.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

import plotly.graph_objects as go

from ..analysis import Agreement, Baselines, LensReport
from ..counterfactuals import CounterfactualComparison
from ..errors import IntakeError
from ..inspection.dependence import PartialDependence
from ..inspection.interactions import Interactions
from ..inspection.two_models import ModelComparison
from ..methods import cube_drawn, smallest_factor
from ..registry import method, methods
from ..sev.engine import SEVExplanation
from ..sparse.compare import SparsityComparison
from ..views.dependence import dependence_figure
from ..vocabulary import factor_text, fmt_ps, format_number
from .bundle import RowResults
from .cohorts import CohortsPart, cohort_figures
from .dependence import CONTENTS as dependence_contents, sev_feature

if TYPE_CHECKING:
    from ..linear.compare import LinearExplanation

OWN_SECTIONS = {"dependence": "Dependence", "appendix": "Appendix"}
"""The report's sections that are no method's, with their titles (after the methods' sections)."""
BUILT_IN = ("sev", "lens", "linear", "baselines", "agreement", "counterfactuals")
"""The methods a :class:`RowReport` keeps in fields of their own (any other registered method: ``plugged``)."""
INDEX_COLUMNS = ("row", "prediction", "score", "sev_minus", "sev_plus", "sev_restricted", "lens_smallest_factor",
                 "lens_ps", "linear_support", "pdf")
"""The columns of a batch's ``index.csv`` (the headline numbers of each report)."""


def report_sections() -> tuple[str, ...]:
    """A report's sections, in the order they are laid out: each registered method with a section, then the
    partial dependence and the appendix.

    Returns
    -------
    tuple of str
        The sections.
    """
    return (*(m.name for m in methods() if m.section is not None), *OWN_SECTIONS)


def section_title(name: str) -> str:
    """A section's title.

    Parameters
    ----------
    name : str
        A section of :func:`report_sections`.

    Returns
    -------
    str
        Its title.
    """
    return OWN_SECTIONS.get(name) or method(name).section.title


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
    """Everything one row's report shows: the results it read from the row's bundle, the figures (plotly, one data
    object per chart), the headline numbers and the plain-language SEV reading. ``row`` is the dataset position
    (None for a row that is not in the data); ``edited`` marks a row changed in the app's what-if editor.

    Parameters
    ----------
    results : RowResults
        The row's results (the setup, the row and the parameters with them).
    sections : tuple of str
        The sections shown.
    created : datetime.datetime
        When it was built.
    edited : bool
        Changed in the what-if editor.
    sev, baselines, lens, linear, agreement, counterfactuals
        The built-in methods' results the sections read (None: not in the report).
    plugged : dict of str to object
        Any other registered method's result, by name.
    sparsity, dependence, cohorts, models, interactions
        The report's other parts (None: not in the report).
    figures : dict of str to plotly.graph_objects.Figure
        The figures.
    headline : Headline, optional
        The headline numbers.
    reading : str
        The SEV reading.
    """

    results: RowResults
    sections: tuple[str, ...]
    created: datetime
    edited: bool = False
    sev: SEVExplanation | None = None
    baselines: Baselines | None = None
    lens: LensReport | None = None
    linear: LinearExplanation | None = None
    agreement: Agreement | None = None
    counterfactuals: CounterfactualComparison | None = None  # SEV's kinds of reference beside DiCE
    plugged: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, go.Figure] = field(default_factory=dict)
    headline: Headline | None = None
    sparsity: SparsityComparison | None = None  # before/after, when the model was trained on the Sparser page
    reading: str = ""
    dependence: PartialDependence | None = None  # PDP and ICE of the row's leading feature (report/dependence.py)
    cohorts: CohortsPart | None = None  # the Cohorts & fairness page's results, when it computed any
    models: ModelComparison | None = None  # a second model beside this one (explain_core.inspection.two_models)
    interactions: Interactions | None = None  # the model's strongest pairs, in the dependence section

    setup = property(lambda self: self.results.setup, doc="The data, model and reference.")
    query = property(lambda self: self.results.query, doc="The row.")
    row = property(lambda self: self.results.position, doc="Its dataset position (None: not a dataset row).")
    params = property(lambda self: self.results.params, doc="Every parameter.")
    score = property(lambda self: self.results.score, doc="The model's score.")
    label = property(lambda self: self.results.label, doc="The predicted label.")

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

    @property
    def _cube_drawn(self) -> bool:
        return cube_drawn(self.setup)

    def result(self, name: str):
        """A method's result in this report, or None.

        Parameters
        ----------
        name : str
            The method's name.

        Returns
        -------
        object or None
            The result.
        """
        return getattr(self, name) if name in BUILT_IN else self.plugged.get(name)

    def contents(self) -> list[tuple[str, list[str]]]:
        """The report's parts in order, each with what it holds (for a preview), numbered as in the PDF.

        Returns
        -------
        list of (str, list of str)
            Each part's title and its contents.
        """
        trained = ["how the model was trained for sparse explanations, before vs after"] if self.sparsity else []
        trained += ["a second model beside this one: metrics, disagreements, this row"] if self.models else []
        parts = [("Summary", ["title, date, dataset, model and its test metrics", *trained,
                              "the row's values and prediction, the reference, restricted features",
                              "headline numbers", "every parameter and seed"])]
        numbered = [dependence_contents if name == "dependence" else _method_contents(self.results, name)
                    for name in self.sections if name != "appendix"]
        parts += [(f"{i}. {title}", items) for i, (title, items) in enumerate(numbered, 1)]
        if self.cohorts is not None:
            parts.append((f"{len(numbered) + 1}. Cohorts and fairness", self.cohorts.contents()))
        if "appendix" in self.sections:
            parts.append(("Appendix", ["definitions", "papers cited"]))
        return parts

    def json_files(self) -> dict[str, str]:
        """Each result of the report as the app's JSON download (``<pdf name>.<part>.json``: the result's own
        ``to_json`` with the row, the setup and the parameters beside it).

        Returns
        -------
        dict of str to str
            File name → JSON text.
        """
        stem = self.file_name.removesuffix(".pdf")
        parts = {**{m.name: self.result(m.name) for m in methods() if m.json_type is not None},
                 "dependence": self.dependence, "interactions": self.interactions}
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


def _method_contents(results: RowResults, name: str) -> tuple[str, list[str]]:
    section = method(name).section
    contents = section.contents(results) if callable(section.contents) else section.contents
    return section.title, list(contents)


def check_sections(sections: Iterable[str]) -> tuple[str, ...]:
    """The report sections asked for, checked and in report order.

    Parameters
    ----------
    sections : iterable of str
        Names from :func:`report_sections`.

    Returns
    -------
    tuple of str
        The sections, in :func:`report_sections` order.

    Raises
    ------
    IntakeError
        When a name is not a section.
    """
    sections, known = tuple(sections), report_sections()
    unknown = [s for s in sections if s not in known]
    if unknown:
        raise IntakeError(f"Unknown report sections {', '.join(map(str, unknown))}; choose from {', '.join(known)}.")
    return tuple(s for s in known if s in sections)


def build_row_report(results: RowResults, sections: Iterable[str] | None = None, *,
                     edited: bool = False) -> RowReport:
    """Read one row's report from its bundle of results: each section reads what it shows (the bundle computes
    it on first access, or hands over what the app supplied), once; nothing is decided or computed elsewhere.

    Parameters
    ----------
    results : RowResults
        The row's results.
    sections : iterable of str, optional
        The sections (:func:`report_sections`; default: all).
    edited : bool
        Changed in the what-if editor.

    Returns
    -------
    RowReport
        Everything the row's report shows.

    Raises
    ------
    IntakeError
        When a section is unknown, or a method's parameters do not fit the setup.
    """
    sections = check_sections(report_sections() if sections is None else sections)
    report = RowReport(results, sections, datetime.now().astimezone(), edited)
    for name in sections:
        if name not in OWN_SECTIONS:
            results.get(name)  # a method reads the others it needs (the agreement reads four) through the bundle
    for m in methods():  # what the sections read, their inputs included
        value = results.kept(m.name)
        if m.name in BUILT_IN:
            setattr(report, m.name, value)
        elif value is not None:
            report.plugged[m.name] = value
    s = results.setup
    if "dependence" in sections:
        lead = sev_feature(results.at_hand("sev"), s.model.threshold)  # the row's SEV, shown or not, when at hand
        report.dependence = results.get("dependence", lead)
        report.interactions = results.get("interactions")
    if s.training is not None:
        report.sparsity = s.training.comparison(s, results.params.sev)
    report.cohorts, report.models = results.get("cohorts"), results.get("models")
    report.figures = {**_figures(report), **(cohort_figures(report.cohorts) if report.cohorts is not None else {})}
    report.headline = _headline(report)
    report.reading = method("sev").reading(results) if report.sev is not None else ""
    return report


def _figures(report: RowReport) -> dict[str, go.Figure]:
    figs = {name: method(name).figure(report.results) for name in report.sections
            if name not in OWN_SECTIONS and method(name).figure is not None}
    if report.dependence is not None:
        figs["dependence"] = dependence_figure(report.dependence)
    return figs


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
    methods_run = [r.method for r in linear.comparison.results]
    return "exact" if "exact" in methods_run else "iht"


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
        method_shown = linear_support_method(linear)
        h.update(linear_method=method_shown, linear_support=linear.support_groups(method_shown))
    if report.agreement is not None:
        h["most_named"] = report.agreement.most_named()
    return Headline(report.row, s.class_names[report.label], report.score, **h)
