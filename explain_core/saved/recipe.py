"""What a saved analysis is made of, as plain data.

A session's setup comes from a few choices: a bundled dataset by name, or an uploaded table (its file and the
choices that made it a dataset); a demo model, a model trained here (kind and seed) or a model file (its bytes and
the loading choices); the class explained, the reference (statistic, population, rounding, custom values) and the
restricted features. Beside the setup: the parameters, the row, the what-if edits and the kept cohorts.
:class:`AnalysisState` holds exactly these as JSON — never a pickle, never a path: files are named by SHA-256 and
travel as bytes beside it (:func:`~explain_core.saved.restore.rebuild` builds the setup again). A state read
back is checked field by field: a damaged or edited record is an :class:`~explain_core.errors.IntakeError` with a
plain message, never a crash.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..errors import ExplainError, IntakeError, check_choice
from ..inspection.filters import Cohort
from ..intake.layout import TableChoices
from ..results import decode, to_jsonable
from ..setup import Parameters, Setup

FORMAT = "explain-explorer analysis"
VERSION = 1
MODEL_ORIGINS = ("demo", "trained", "file")
SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class FileRef:
    """A file the analysis needs, by content: its SHA-256, the name it was uploaded as and its size in bytes.

    Parameters
    ----------
    sha256 : str
        The content's hash.
    name : str
        The uploaded name.
    size : int
        Bytes.
    """

    sha256: str
    name: str
    size: int

    @classmethod
    def of(cls, data: bytes, name: str) -> "FileRef":
        """The reference of a file's bytes.

        Parameters
        ----------
        data : bytes
            The file.
        name : str
            Its name.

        Returns
        -------
        FileRef
            Its SHA-256, name and size.
        """
        return cls(hashlib.sha256(data).hexdigest(), str(name), len(data))


@dataclass(frozen=True)
class DataRecipe:
    """A bundled dataset (``demo``), or an uploaded table (``file``) with the arguments of
    :func:`~explain_core.intake.data.make_dataset` that made it a dataset.

    Parameters
    ----------
    demo : str, optional
        A bundled dataset's name.
    file : FileRef, optional
        The uploaded table.
    target, task, positive_class, name
        :func:`~explain_core.intake.data.make_dataset`'s arguments.
    kinds, onehot_groups, drop, holdout
        Its :class:`~explain_core.intake.layout.TableChoices`, as plain tuples (:attr:`choices` gives them back).
    """

    demo: str | None = None
    file: FileRef | None = None
    target: str = ""
    task: str | None = None
    positive_class: object = None
    kinds: tuple[tuple[str, str], ...] = ()
    onehot_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    drop: tuple[str, ...] = ()
    name: str = "upload"
    holdout: tuple[int, ...] | None = None  # the rows the analyst marked as not used in training

    @classmethod
    def upload(cls, file: FileRef, target: str, *, task: str | None = None, positive_class=None,
               name: str = "upload", choices: TableChoices | None = None) -> "DataRecipe":
        """The recipe of ``make_dataset(read_table(file), target, …)`` with these arguments.

        Parameters
        ----------
        file : FileRef
            The uploaded table.
        target : str
            The target column.
        task, positive_class, name, choices
            As :func:`~explain_core.intake.data.make_dataset` takes them (``choices``: its
            :class:`~explain_core.intake.layout.TableChoices`, kept here as plain tuples).

        Returns
        -------
        DataRecipe
            The recipe.
        """
        shape = TableChoices() if choices is None else choices
        return cls(None, file, str(target), task, _plain(positive_class),
                   tuple((str(c), str(k)) for c, k in (shape.kinds or {}).items()),
                   tuple((str(g), tuple(map(str, cs))) for g, cs in (shape.onehot_groups or {}).items()),
                   tuple(map(str, shape.drop)), str(name),
                   None if shape.holdout is None else tuple(map(int, shape.holdout)))

    @property
    def choices(self) -> TableChoices:
        """The :class:`~explain_core.intake.layout.TableChoices` this recipe keeps, as ``make_dataset`` takes them."""
        return TableChoices(kinds=dict(self.kinds), onehot_groups={g: list(cs) for g, cs in self.onehot_groups},
                            drop=list(self.drop), holdout=None if self.holdout is None else list(self.holdout))


@dataclass(frozen=True)
class ModelRecipe:
    """A demo model (``origin="demo"``) or one trained here (``"trained"``): its ``kind`` and ``seed``; or a model
    file (``"file"``) with the loading choices of :func:`~explain_core.setup.model_from_upload` (``positive``: the
    model's label for the positive class, None for the dataset's own); ``source`` replaces the loaded model's
    description (a model trained on the Sparser page is kept as its ``.skops`` file).

    Parameters
    ----------
    origin : str
        ``"demo"``, ``"trained"`` or ``"file"``.
    kind : str, optional
        The model kind.
    seed : int
        Its seed.
    file : FileRef, optional
        The model file.
    threshold : float, optional
        The decision threshold.
    positive : object
        The model's label for the positive class.
    trusted_types : tuple of str
        Confirmed skops types.
    by_order : bool
        Columns taken in order.
    source : str, optional
        The model's description.
    """

    origin: str
    kind: str | None = None
    seed: int = 0
    file: FileRef | None = None
    threshold: float | None = None
    positive: object = None
    trusted_types: tuple[str, ...] = ()
    by_order: bool = False
    source: str | None = None


@dataclass(frozen=True)
class AnalysisState:
    """Everything a session is made of, as plain data (see the module's docstring).

    Parameters
    ----------
    data : DataRecipe
        The dataset.
    model : ModelRecipe
        The model.
    positive_class : object
        The class explained.
    statistic, population : str
        The reference's.
    rounded : bool
        Whole-valued features rounded.
    overrides : tuple of (str, object)
        Custom reference values.
    restricted : tuple of str
        Restricted features.
    parameters : Parameters
        Every parameter.
    row : int
        The row.
    whatif : tuple of (str, object)
        The what-if edits.
    cohorts : tuple of Cohort
        The kept cohorts.
    threshold : float, optional
        The session's decision threshold.
    second : ModelRecipe, optional
        A second model.
    """

    data: DataRecipe
    model: ModelRecipe
    positive_class: object = None
    statistic: str = "mean"
    population: str = "opposite"
    rounded: bool = False
    overrides: tuple[tuple[str, object], ...] = ()
    restricted: tuple[str, ...] = ()
    parameters: Parameters = field(default_factory=Parameters)
    row: int = 0
    whatif: tuple[tuple[str, object], ...] = ()
    cohorts: tuple[Cohort, ...] = ()  # the cohorts the analyst kept (Cohorts & fairness page)
    threshold: float | None = None  # the decision threshold chosen on The model page (None: the model's own)
    second: ModelRecipe | None = None  # a second model beside the session's, on the same data (inspection.two_models)

    @classmethod
    def of(cls, setup: Setup, data: DataRecipe, model: ModelRecipe, *, parameters: Parameters, row: int,
           whatif: Mapping | None = None, cohorts=(), second: ModelRecipe | None = None) -> "AnalysisState":
        """The state of a session: ``setup`` (made from ``data`` and ``model``) and its parameters, row, edits and
        cohorts, and the recipe of its ``second`` model, if any.

        Parameters
        ----------
        setup : Setup
            The session's setup.
        data : DataRecipe
            How its data was made.
        model : ModelRecipe
            How its model was made.
        parameters : Parameters
            Every parameter.
        row : int
            The row.
        whatif : mapping, optional
            The what-if edits.
        cohorts : sequence of Cohort
            The kept cohorts.
        second : ModelRecipe, optional
            A second model.

        Returns
        -------
        AnalysisState
            The state.
        """
        ref = setup.reference
        return cls(data, model, _plain(setup.dataset.positive_class), ref.statistic, ref.population, ref.rounded,
                   tuple((str(k), _plain(v)) for k, v in ref.overrides.items()), tuple(setup.restricted),
                   parameters, int(row), tuple((str(c), _plain(v)) for c, v in (whatif or {}).items()),
                   tuple(cohorts), setup.chosen_threshold, second)

    @property
    def files(self) -> tuple[FileRef, ...]:
        """The files this state names (the uploaded table, the model file)."""
        return tuple(f for f in (self.data.file, self.model.file, getattr(self.second, "file", None)) if f is not None)

    def to_json(self) -> str:
        """The state as the JSON text a saved record holds (with its format and version).

        Returns
        -------
        str
            The JSON.
        """
        return json.dumps({"format": FORMAT, "version": VERSION, "state": to_jsonable(self, exact=True)},
                          ensure_ascii=False, allow_nan=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "AnalysisState":
        """The state a saved record holds; :class:`IntakeError` when it is not one this version reads.

        Parameters
        ----------
        text : str
            The JSON.

        Returns
        -------
        AnalysisState
            The state.

        Raises
        ------
        IntakeError
            When the record is damaged or from another version.
        """
        try:
            payload = json.loads(text)
            if payload.get("format") != FORMAT or payload.get("version") != VERSION:
                raise IntakeError("it was written by another version of this app")
            state = decode(cls, payload["state"])
            _check(state)
        except ExplainError as exc:
            raise IntakeError(f"This saved analysis cannot be read: {exc}") from None
        except (ValueError, TypeError, KeyError, AttributeError):
            raise IntakeError("This saved analysis is damaged (its record is not one this app wrote), so it "
                              "cannot be restored.") from None
        return state


def _plain(value):
    """A value as a JSON scalar (numpy scalars as Python numbers, NaN as None)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value != value:
        return None
    return value if isinstance(value, SCALARS) else str(value)


def _check(state: AnalysisState) -> None:
    """Types decode() does not enforce: scalars where values go, and one source of data and of each model."""
    data, models = state.data, [m for m in (state.model, state.second) if m is not None]
    values = [data.positive_class, state.positive_class, *(m.positive for m in models),
              *(v for _, v in state.overrides), *(v for _, v in state.whatif),
              *(v for c in state.cohorts for f in c.filters for v in (f.value if isinstance(f.value, tuple)
                                                                       else (f.value,)))]
    if not all(isinstance(v, SCALARS) for v in values) or (data.demo is None) == (data.file is None):
        raise ValueError("not a state")
    for model in models:
        check_choice(model.origin, MODEL_ORIGINS, "model origin")
        if (model.origin == "file") != (model.file is not None) or (model.origin != "file" and model.kind is None):
            raise ValueError("not a state")
