"""How a saved analysis's setup is built again: :func:`rebuild` builds the session an
:class:`~explain_core.saved.recipe.AnalysisState` describes with the functions the pages build with
(:class:`Builders`). A model file goes through :func:`~explain_core.setup.model_from_upload`, the same safe loading
(allow-lists, sandboxed worker) as an upload; every step is seeded, so the same analysis comes back.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Callable, Mapping

import pandas as pd

from ..errors import IntakeError, check_choice
from ..inspection.filters import Cohort
from ..intake.data import Dataset, find_value, make_dataset
from ..intake.demos import load_demo
from ..intake.demo_models import DEMO_KINDS, train_model
from ..intake.tables import read_table
from ..intake.trained import TrainedModel
from ..reference import make_reference
from ..setup import Parameters, Setup, UploadChoices, demo_setup, make_setup, model_from_upload
from .recipe import AnalysisState


@dataclass(frozen=True)
class Builders:
    """The functions a restore builds with; the app passes its cached ones, so a restored analysis shares its caches.

    ``demo(name, kind, seed)`` → a demo :class:`Setup`; ``train(dataset, kind, seed)`` → a model trained here;
    ``load(dataset, data, filename, choices)`` → a model file loaded with its
    :class:`~explain_core.setup.UploadChoices` (:func:`~explain_core.setup.model_from_upload`);
    ``read(data, filename)`` → an uploaded table.

    Parameters
    ----------
    demo, train, load, read : callable
        As above.
    """

    demo: Callable[[str, str, int], Setup] = lambda name, kind, seed: demo_setup(name, kind, seed=seed)
    train: Callable[[Dataset, str, int], TrainedModel] = lambda dataset, kind, seed: train_model(dataset, kind,
                                                                                                seed=seed)
    load: Callable[[Dataset, bytes, str, UploadChoices], TrainedModel] = model_from_upload
    read: Callable[[bytes, str], pd.DataFrame] = lambda data, name: read_table(data, filename=name)


@dataclass(frozen=True)
class Restored:
    """A rebuilt session: the setup, its parameters, the row and the what-if edits (checked against the data).

    Parameters
    ----------
    setup : Setup
        The rebuilt setup.
    parameters : Parameters
        Every parameter.
    row : int
        The row.
    whatif : dict, optional
        The what-if edits.
    cohorts : tuple of Cohort
        The kept cohorts, checked.
    second : Setup, optional
        The second model's setup.
    """

    setup: Setup
    parameters: Parameters
    row: int
    whatif: dict | None
    cohorts: tuple[Cohort, ...] = ()
    second: Setup | None = None  # the second model, aligned with ``setup``


def rebuild(state: AnalysisState, files: Mapping[str, bytes], builders: Builders = Builders()) -> Restored:
    """The session ``state`` describes, built again from ``files`` (by SHA-256) with ``builders``.

    Parameters
    ----------
    state : AnalysisState
        The session.
    files : mapping of str to bytes
        Its files, by SHA-256.
    builders : Builders
        The functions to build with.

    Returns
    -------
    Restored
        The rebuilt session.

    Raises
    ------
    IntakeError
        When a file is missing or damaged, the row is not in the data, or a step of the build refuses its input.
    """
    for ref in state.files:
        data = files.get(ref.sha256)
        if data is None or len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise IntakeError(f"The file {ref.name} of this saved analysis is missing or damaged, so it cannot be "
                              "restored.")
    setup = _base_setup(state, files, builders)
    if state.positive_class is not None and find_value(state.positive_class, [setup.dataset.positive_class]) is None:
        setup = setup.with_positive_class(state.positive_class)
    if state.threshold is not None:
        setup = setup.with_threshold(state.threshold)
    reference = make_reference(setup.dataset, setup.train_rows, statistic=state.statistic,
                               population=state.population, threshold=setup.model.threshold,
                               overrides=dict(state.overrides), rounded=state.rounded)
    setup = setup.with_reference(reference).with_restricted(state.restricted)
    rows = len(setup.dataset.features)
    if not 0 <= state.row < rows:
        raise IntakeError(f"This saved analysis names row {state.row}, which its data does not have (rows 0 to "
                          f"{rows - 1}).")
    whatif = {c: v for c, v in state.whatif if c in setup.dataset.columns} or None
    return Restored(setup, state.parameters, state.row, whatif, tuple(c.check(setup.dataset) for c in state.cohorts),
                    _second(state, setup, files, builders))


def _second(state: AnalysisState, setup: Setup, files: Mapping[str, bytes], builders: Builders) -> Setup | None:
    """The second model aligned with ``setup``; None without one, or when it no longer fits the data (the session's
    data changed after it was chosen): the analysis comes back without it."""
    from ..inspection.two_models import aligned_second

    if state.second is None:
        return None
    try:
        return aligned_second(setup, _base_setup(replace(state, model=state.second), files, builders))
    except IntakeError:
        return None


def _base_setup(state: AnalysisState, files: Mapping[str, bytes], builders: Builders) -> Setup:
    """The dataset and model with the default reference and nothing restricted."""
    data, model = state.data, state.model
    if model.origin == "demo":
        if data.demo is None:
            raise IntakeError("This saved analysis pairs a demo model with uploaded data, which this app never does.")
        check_choice(model.kind, DEMO_KINDS, "model kind")
        return builders.demo(data.demo, model.kind, model.seed)
    dataset = (load_demo(data.demo) if data.demo is not None else
               make_dataset(builders.read(files[data.file.sha256], data.file.name), data.target, task=data.task,
                            positive_class=data.positive_class, name=data.name, choices=data.choices))
    if model.origin == "trained":
        check_choice(model.kind, DEMO_KINDS, "model kind")
        trained = builders.train(dataset, model.kind, model.seed)
    else:
        choices = UploadChoices(seed=model.seed, threshold=model.threshold, positive_class=model.positive,
                                trusted_types=model.trusted_types, by_order=model.by_order)
        trained = builders.load(dataset, files[model.file.sha256], model.file.name, choices)
        if model.source:
            trained = replace(trained, source=model.source)
    return make_setup(dataset, trained)
