"""What an SEV search answers (SEV paper, Defs 1-4): :class:`SEVResult`, one value of one query with its minimal
explanations and how the search ended, and :class:`SEVExplanation`, SEV⁺, SEV⁻ and SEV® of one query with the
paper's table (Fig. 1c/1d). The searches that fill them: :mod:`.engine` (the BFS) and :mod:`.exact_sev`."""
from __future__ import annotations

import functools
import itertools
from dataclasses import MISSING, dataclass, fields

import pandas as pd
import numpy as np

from ..errors import IntakeError, check_choice
from ..intake.layout import GroupLayout
from ..reference import Reference
from ..results import Explanation
from .bracket import bracket_words

SEV_RESULTS = ("minus", "plus", "restricted")  # the results an SEVExplanation holds, by name (SEV⁻, SEV⁺, SEV®)


@functools.cache
def _field_defaults(cls) -> dict:
    """Every field of the dataclass ``cls`` that has a default, with it (read once per class)."""
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


@dataclass(frozen=True, eq=False)
class SEVResult(Explanation):
    """One SEV value for one query, with every minimal explanation and the vertices evaluated.

    ``explanations`` lists, for each flipping vertex at the minimal depth, the groups that moved
    (to the reference for ``minus``, to the query's value for ``plus``). ``status`` is
    ``explained``, ``beyond_depth`` (nothing flips up to ``max_depth``, the depth searched: the
    requested depth, or less where a layer would exceed ``MAX_LAYER_VERTICES``), ``unexplainable``
    (nothing flips even when every movable group moves) or ``limit`` (an exact engine's budget ran out:
    ``value``, when set, is the fewest moves found, ``bound`` a proven lower bound).

    A BFS stopped by its depth or its budget (``budget_rows``: model rows per query) leaves the row open
    (``beyond_depth``) or, bracketed (:mod:`.bracket`), as ``limit`` with ``bound`` the proved lower bound and
    ``value`` the size of a real flip found by a greedy path (``explained`` when the two meet): :attr:`lower` and
    :attr:`upper` read the bracket of any status. ``rows`` counts the model rows the search scored per query,
    ``next_rows`` those the first layer not searched would have needed (a cap applied: ``budget_rows`` set when it
    was the budget, else the layer limit :data:`MAX_LAYER_VERTICES`).

    ``engine`` names what answered (``bfs``, ``cp-sat``, ``additive``: :mod:`.dispatch`); ``certified`` says the
    value (or "nothing flips") is proven; ``complete`` that every minimal explanation is listed (the exact engines
    cap the list); ``first_flip`` that the BFS stopped at the first flipping vertex (``explanations="first"``): the
    value is exact, ``explanations`` holds that vertex only; ``note`` says in words why an engine was chosen or what
    it could not do.

    Parameters
    ----------
    kind : str
        ``"minus"`` or ``"plus"`` (SEV® is ``"minus"`` with ``restricted`` groups).
    value : int, optional
        The SEV.
    explanations : tuple of tuple of str
        The minimal explanations.
    status : str
        How the search ended.
    explained_class, max_depth : int
        The query's class, and the depth searched.
    restricted : tuple of str
        Groups held.
    reference_class : int, optional
        The reference's predicted class.
    vertex_masks, vertex_scores : numpy.ndarray, optional
        The vertices evaluated and their scores (``keep_scores``).
    engine : str
        What answered.
    certified : bool, optional
        Whether the value is proven.
    bound : int, optional
        A proven lower bound (status ``limit``).
    complete, first_flip : bool
        Every minimal explanation listed; the search stopped at its first flip.
    note : str
        The engine's note.
    rows, budget_rows, next_rows : int, optional
        Model rows the search scored per query, its budget, and what the first layer not searched would have needed.
    """

    kind: str
    value: int | None
    explanations: tuple[tuple[str, ...], ...]
    status: str
    explained_class: int
    max_depth: int
    restricted: tuple[str, ...] = ()
    reference_class: int | None = None
    vertex_masks: np.ndarray | None = None  # (m, p) bool, True = query value
    vertex_scores: np.ndarray | None = None  # (m,) model score of each evaluated vertex
    engine: str = "bfs"
    certified: bool | None = None  # None: filled in from the status (the BFS proves what it reports, within depth)
    bound: int | None = None
    complete: bool = True
    first_flip: bool = False
    note: str = ""
    rows: int | None = None
    budget_rows: int | None = None
    next_rows: int | None = None

    meta_parameters = ("kind", "max_depth", "restricted")

    def __post_init__(self):
        if self.certified is None:
            object.__setattr__(self, "certified", self.status in ("explained", "unexplainable"))

    @classmethod
    def defaults(cls, **values) -> dict:
        """Every field with a default, then ``values``: a base for :meth:`of_fields`.

        Parameters
        ----------
        **values
            Fields to set, by name.

        Returns
        -------
        dict
            Field name → value.
        """
        return _field_defaults(cls) | values

    @classmethod
    def of_fields(cls, values: dict) -> SEVResult:
        """``SEVResult(**values)`` for ``values`` naming every field (``certified`` filled in), built without the
        dataclass's field-by-field ``__init__``: a dataset-wide search builds one per row, in a fraction of the
        time. The same object.

        Parameters
        ----------
        values : dict
            Every field by name (as :meth:`defaults` gives them, completed).

        Returns
        -------
        SEVResult
            The result.
        """
        result = object.__new__(cls)
        result.__dict__.update(values)
        return result

    @property
    def method(self) -> str:
        return self.label

    @property
    def explainable(self) -> bool:
        return self.status == "explained"

    @property
    def label(self) -> str:
        return {"plus": "SEV⁺", "minus": "SEV®" if self.restricted else "SEV⁻"}[self.kind]

    @property
    def shown(self) -> str:
        """The value as the app and reports show it: ``> d`` when nothing flips within depth d, ``none`` when
        nothing flips at all."""
        if self.status == "explained":
            return str(self.value)
        if self.status == "limit":
            return f"{self.bound or 0}–{self.value}" if self.value is not None else f"≥ {self.bound or 0}"
        return f"> {self.max_depth}" if self.status == "beyond_depth" else "none"

    @property
    def lower(self) -> int | None:
        """The proved lower bound: the value when found, else the depth every smaller set was tried to, + 1 (None
        when nothing flips at all)."""
        if self.status == "explained":
            return self.value
        if self.status == "limit":
            return self.bound or 0
        return self.max_depth + 1 if self.status == "beyond_depth" else None

    @property
    def upper(self) -> int | None:
        """The size of a real flip (checked by the model), or None when none was found."""
        return self.value if self.status in ("explained", "limit") else None

    def paths(self) -> list[tuple[str, ...]]:
        """Every shortest hypercube path, as the order in which groups move (each explanation's orderings).

        Returns
        -------
        list of tuple of str
            The paths.
        """
        return [order for groups in self.explanations for order in itertools.permutations(groups)]

    @property
    def message(self) -> str:
        """A one-line reading of the outcome."""
        if self.value == 0:
            return f"{self.label} = 0: the reference itself is already predicted in the query's class"
        if self.status == "explained":
            n = len(self.explanations)
            listed = ", the first found: the search stopped there" if self.first_flip else \
                "" if self.complete else ", the first found: more exist"
            return f"{self.label} = {self.value} ({n} minimal explanation{'s' if n != 1 else ''}{listed})"
        if self.reference_class == self.explained_class and self.kind == "minus":
            return (f"{self.label}: not found — the reference is itself predicted in the query's class; "
                    "use a reference built from the other class")
        if self.status == "beyond_depth":
            return f"{self.label}: no explanation within depth {self.max_depth} (deeper layers were not searched)"
        if self.status == "limit" and self.engine == "bfs":
            return f"{self.label} {bracket_words(self)}"
        if self.status == "limit":
            if self.value is not None:
                return (f"{self.label}: between {self.bound or 0} and {self.value} — the solver's budget ran out "
                        "before it proved the minimum")
            return f"{self.label}: at least {self.bound or 0} — the solver's budget ran out before any flip was found"
        held = f" with {', '.join(self.restricted)} held fixed" if self.restricted else ""
        return f"{self.label}: not explainable — moving every feature{held} does not flip the prediction"



@dataclass(frozen=True, eq=False)
class SEVExplanation(Explanation):
    """SEV⁺, SEV⁻ and (with restricted groups) SEV® of one query, with what a table needs.

    Parameters
    ----------
    query : pandas.Series
        The row.
    reference : Reference
        The reference.
    layout : GroupLayout
        The feature groups.
    score : float
        The model's score of the row.
    explained_class : int
        Its predicted class.
    plus, minus : SEVResult
        SEV⁺ and SEV⁻.
    restricted : SEVResult, optional
        SEV®.
    """

    query: pd.Series
    reference: Reference
    layout: GroupLayout
    score: float
    explained_class: int
    plus: SEVResult
    minus: SEVResult
    restricted: SEVResult | None

    method = "SEV"
    meta_parameters = ("held", "searched_depth")

    @property
    def held(self) -> tuple[str, ...]:
        """The restricted groups of SEV® (empty without)."""
        return self.restricted.restricted if self.restricted is not None else ()

    @property
    def searched_depth(self) -> int:
        return self.minus.max_depth

    def result(self, which: str) -> SEVResult:
        """The result named ``which``: ``minus`` (SEV⁻), ``plus`` (SEV⁺) or ``restricted`` (SEV®); an
        :class:`IntakeError` for another name, or for ``restricted`` when no features were restricted.

        Parameters
        ----------
        which : str
            ``"minus"``, ``"plus"`` or ``"restricted"``.

        Returns
        -------
        SEVResult
            The result.

        Raises
        ------
        IntakeError
            For another name, or ``restricted`` without restricted features.
        """
        check_choice(which, SEV_RESULTS, "SEV result")
        result = getattr(self, which)
        if result is None:
            raise IntakeError("No SEV® here: pass restricted features to explain_sev.")
        return result

    def results(self) -> dict[str, SEVResult]:
        """The results this explanation holds, by name, in the order SEV⁻, SEV⁺, SEV® (SEV® only when computed).

        Returns
        -------
        dict of str to SEVResult
            The results.
        """
        return {which: getattr(self, which) for which in SEV_RESULTS if getattr(self, which) is not None}

    def table(self, which: str = "minus", unchanged: str = "—") -> pd.DataFrame:
        """The paper's table (Fig. 1c/1d): query, one row per explanation (moved groups only), reference.

        Parameters
        ----------
        which : str
            ``"minus"``, ``"plus"`` or ``"restricted"``.
        unchanged : str
            What an unmoved group's cell shows.

        Returns
        -------
        pandas.DataFrame
            The table.

        Raises
        ------
        IntakeError
            As :meth:`result`.
        """
        result = self.result(which)
        query_row = self.layout.values(self.query.to_dict())
        ref_row = self.layout.values(self.reference.values)
        moved_to = ref_row if result.kind == "minus" else query_row
        start, end = (("Query", query_row), ("Reference", ref_row))[::1 if result.kind == "minus" else -1]
        rows, index = [start[1]], [start[0]]  # from the search's start (SEV⁺: the reference), explanations 1, 2, …
        for i, groups in enumerate((e for e in result.explanations if e), 1):
            rows.append({g: (moved_to[g] if g in groups else unchanged) for g in self.layout.names})
            index.append(f"Explanation {i}")
        rows.append(end[1])
        index.append(end[0])
        return pd.DataFrame(rows, index=index, columns=list(self.layout.names))

