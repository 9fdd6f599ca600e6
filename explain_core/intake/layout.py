"""Feature groups: the unit every explanation moves, a dataset's :class:`GroupLayout` of them, and the
:class:`TableChoices` that shape a table into them.

A *feature group* is a numeric or binary column, a categorical column (one group however a model encodes it), or a
declared set of one-hot columns. The groups of a dataset, with each model input column's group, are its
:class:`GroupLayout` (:attr:`explain_core.intake.data.Dataset.layout`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

KINDS = ("numeric", "binary", "categorical")
NO_COLUMN = "none"  # a one-hot block's value when none of its columns is 1


@dataclass(frozen=True)
class TableChoices:
    """How :func:`~explain_core.intake.data.make_dataset` shapes a table: kinds over the inferred ones, declared
    one-hot blocks, columns dropped and the rows held out. The defaults change nothing; the mappings are kept as
    given (read once, when the dataset is made).

    Parameters
    ----------
    kinds : mapping of str to str, optional
        Column → ``"numeric"``, ``"categorical"`` or ``"binary"``, over the inferred kinds.
    onehot_groups : mapping of str to sequence of str, optional
        Block name → its 0/1 columns (``{"purpose": ["purpose_car", "purpose_tv"]}``).
    drop : sequence of str
        Columns left out of the features.
    holdout : sequence of int, optional
        Row positions the model was not trained on (:mod:`~explain_core.intake.holdout`).
    """

    kinds: Mapping[str, str] | None = None
    onehot_groups: Mapping[str, Sequence[str]] | None = None
    drop: Sequence[str] = ()
    holdout: Sequence[int] | None = None


@dataclass(frozen=True)
class FeatureGroup:
    """Columns that move together in an explanation (one column, or a declared one-hot block).

    Parameters
    ----------
    name : str
        The group's name: the column's, or the one-hot block's declared name.
    columns : tuple of str
        The raw columns of the group (one, or the 0/1 columns of a block).
    kind : str
        ``"numeric"``, ``"categorical"`` or ``"binary"``; a one-hot block is categorical.
    """

    name: str
    columns: tuple[str, ...]
    kind: str

    @property
    def is_block(self) -> bool:
        """A declared one-hot block (several 0/1 columns, at most one of them 1)."""
        return len(self.columns) > 1

    def value_of(self, values: Mapping):
        """The group's value in ``values`` (column → value): the column's value, or the block's active column.

        Parameters
        ----------
        values : mapping
            Column → value.

        Returns
        -------
        object
            The value, or the active column's name.
        """
        if not self.is_block:
            return values[self.columns[0]]
        return next((c for c in self.columns if values[c] == 1), NO_COLUMN)

    def values_in(self, frame: pd.DataFrame) -> np.ndarray:
        """:meth:`value_of` for every row of ``frame`` (object array).

        Parameters
        ----------
        frame : pandas.DataFrame
            Rows with the group's columns.

        Returns
        -------
        numpy.ndarray
            One value per row.
        """
        if not self.is_block:
            return frame[self.columns[0]].to_numpy()
        return self.active_columns(frame[list(self.columns)].to_numpy(dtype=float))

    def active_columns(self, block: np.ndarray) -> np.ndarray:
        """A block's value in each row of its (rows, columns) 0/1 matrix: the active column, or NO_COLUMN.

        Parameters
        ----------
        block : numpy.ndarray
            The block's (rows, columns) 0/1 matrix.

        Returns
        -------
        numpy.ndarray
            The active column's name per row.
        """
        names = np.array([*self.columns, NO_COLUMN], dtype=object)
        return names[np.where(block.max(axis=1, initial=0) > 0, block.argmax(axis=1), len(self.columns))]


@dataclass(frozen=True)
class GroupLayout:
    """The dataset's feature groups: their names and, for each model input column, its group.

    Parameters
    ----------
    groups : tuple of FeatureGroup
        The groups, in the dataset's column order.
    source : Dataset, optional
        The dataset the layout belongs to (``dataset.layout``), so the engines can reuse work done once per dataset.
    """

    groups: tuple[FeatureGroup, ...]
    source: object = field(default=None, compare=False, repr=False)  # a Dataset (intake.data imports this module)

    @classmethod
    def of(cls, dataset) -> "GroupLayout":
        """The layout of ``dataset`` (``dataset.layout``, built once per dataset).

        Parameters
        ----------
        dataset : Dataset
            The data.

        Returns
        -------
        GroupLayout
            Its layout.
        """
        return dataset.layout

    def __reduce__(self):
        """Pickled (a cached result, a Dask task) without ``source``: it only lets the engines reuse work done once
        per dataset, and every result that holds a layout would otherwise carry the whole table (COMPAS: 464 KB of
        a 466 KB SEV result, unpickled on every run that reads it from Streamlit's cache)."""
        return GroupLayout, (self.groups,)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.groups)

    @cached_property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for g in self.groups for c in g.columns)

    @cached_property
    def column_group(self) -> tuple[int, ...]:
        return tuple(i for i, g in enumerate(self.groups) for _ in g.columns)

    @property
    def size(self) -> int:
        return len(self.groups)

    def indices(self, names: Sequence[str]) -> list[int]:
        """The positions of the groups ``names`` in the layout.

        Parameters
        ----------
        names : sequence of str
            Group names.

        Returns
        -------
        list of int
            Their positions, in the order given.
        """
        return [self.names.index(n) for n in names]

    def values(self, values: Mapping) -> dict[str, object]:
        """One value per group name (a one-hot block's active column) from column → value.

        Parameters
        ----------
        values
            As for :meth:`FeatureGroup.value_of`.

        Returns
        -------
        dict of str to object
            Group name → its value.
        """
        return {g.name: g.value_of(values) for g in self.groups}
