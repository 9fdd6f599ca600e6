"""Hypercube vertices as a compact matrix: rows mixed from base rows (the queries, encoded) and one reference by
group masks (SEV Def. 1: a vertex keeps the query's value where its mask is True, the reference's elsewhere).

A :class:`MixedRows` is what the SEV engine hands a model in a sandboxed worker: it crosses the pipe as the base
rows, the reference and one mask bit per feature group and row (Adult: 13 bytes and an index a row, where the mixed
matrix takes 103 floats), and the worker mixes it (:meth:`MixedRows.array`), the very values the server would have.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class MixedRows:
    """Row r is ``where(keep[r][column_group], bases[which[r]], reference)``."""

    bases: np.ndarray         # (n, columns) the queries' encoded rows
    reference: np.ndarray     # (columns,) the reference's encoded row
    which: np.ndarray         # (m,) the base row of each mixed row
    keep: np.ndarray          # (m, groups) True where a row keeps its base row's group
    column_group: np.ndarray  # (columns,) the feature group of each encoded column

    def __len__(self) -> int:
        return len(self.which)

    def __getitem__(self, index) -> "MixedRows":
        """The rows ``index`` (a slice or integer positions), still compact."""
        return MixedRows(self.bases, self.reference, self.which[index], self.keep[index], self.column_group)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self), len(self.column_group)

    def array(self) -> np.ndarray:
        """The mixed matrix, (m, columns): the base rows gathered, the reference written where a group is not kept
        (a third of ``np.where``'s time on Adult's vertices, where the matrix passes through memory once less)."""
        out = self.bases[self.which].astype(np.result_type(self.bases, self.reference), copy=False)
        np.copyto(out, self.reference, where=(~self.keep)[:, self.column_group])
        return out
