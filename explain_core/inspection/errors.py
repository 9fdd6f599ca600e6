"""Error analysis as Microsoft's Error Analysis does it: a shallow decision tree fitted on the test rows to predict
"the model is wrong" (:func:`~explain_core.inspection.filters.model_outcome`: misclassified, or for a regression an
error in the largest fifth), each leaf read as a rule on the data card's features with its size, error rate and
share of all errors, and each leaf a :class:`~explain_core.inspection.filters.Cohort` selecting exactly its rows.

The tree's inputs are the raw features, not the model's encoding: a numeric feature as its value (a missing value
follows the side scikit-learn's tree sends it to, which the leaf's rule says: "or missing"); any other group one
0/1 column per value (so a split reads "workclass = Private" or "workclass ≠ Private"). ``max_depth`` 3 and
``min_samples_leaf`` :data:`MIN_LEAF_SHARE` of the test rows (at least :data:`MIN_LEAF_ROWS`), seeded.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from ..errors import IntakeError
from ..results import Explanation, ValueEquality
from ..setup import Setup
from .filters import Cohort, Filter, error_words, level_strings, model_outcome

MAX_DEPTH = 3
MIN_LEAF_SHARE = 0.02
MIN_LEAF_ROWS = 10


@dataclass(frozen=True, eq=False)
class ErrorLeaf(ValueEquality):
    """One leaf: its rule (filters, and in words), rows, errors, error rate and share of all the errors."""

    node: int
    filters: tuple[Filter, ...]
    rule: str
    size: int
    errors: int
    error_rate: float
    error_share: float


@dataclass(frozen=True, eq=False)
class ErrorTree(Explanation):
    """The leaves of the error tree, highest error rate first, over ``rows`` test rows with ``errors`` errors.

    Parameters
    ----------
    leaves : tuple of ErrorLeaf
        The leaves.
    rows, errors : int
        Test rows, and errors among them.
    error : str
        What counts as an error, in words.
    max_depth, min_samples_leaf, seed : int
        The tree's settings.
    """

    leaves: tuple[ErrorLeaf, ...]
    rows: int
    errors: int
    error: str
    max_depth: int
    min_samples_leaf: int
    seed: int

    method = "error analysis tree"
    meta_parameters = ("max_depth", "min_samples_leaf", "seed")

    @property
    def error_rate(self) -> float:
        return self.errors / self.rows if self.rows else 0.0

    def table(self) -> pd.DataFrame:
        """One line per leaf: its node, rule, rows, errors, error rate and share of all errors.

        Returns
        -------
        pandas.DataFrame
            The leaves, highest error rate first.
        """
        return pd.DataFrame({"leaf": [leaf.node for leaf in self.leaves], "rule": [leaf.rule for leaf in self.leaves],
                             "rows": [leaf.size for leaf in self.leaves],
                             "errors": [leaf.errors for leaf in self.leaves],
                             "error rate": [leaf.error_rate for leaf in self.leaves],
                             "share of all errors": [leaf.error_share for leaf in self.leaves]})

    def leaf(self, node: int) -> ErrorLeaf:
        """The leaf numbered ``node``.

        Parameters
        ----------
        node : int
            A leaf's node number.

        Returns
        -------
        ErrorLeaf
            The leaf.

        Raises
        ------
        IntakeError
            When no leaf has that number.
        """
        for leaf in self.leaves:
            if leaf.node == node:
                return leaf
        raise IntakeError(f"The error tree has no leaf {node}; its leaves are {[x.node for x in self.leaves]}.")


def tree_inputs(setup: Setup, rows: np.ndarray) -> tuple[np.ndarray, list[tuple[str, str | None]]]:
    """The tree's input matrix of ``rows`` and, per column, (group, value): value None for a numeric group's own
    column, else the level the 0/1 column marks."""
    frame = setup.dataset.features.iloc[rows]
    columns, names = [], []
    for group in setup.dataset.groups:
        raw = group.values_in(frame)
        if group.kind == "numeric":
            columns.append(pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=float))
            names.append((group.name, None))
            continue
        strings = level_strings(raw)
        for level in sorted(set(strings)):
            columns.append((strings == level).astype(float))
            names.append((group.name, level))
    return np.column_stack(columns) if columns else np.zeros((len(rows), 0)), names


def error_tree(setup: Setup, *, max_depth: int = MAX_DEPTH, min_samples_leaf: int | None = None,
               seed: int = 0) -> ErrorTree:
    """The shallow tree of the model's errors on the test rows (module docstring).

    Parameters
    ----------
    setup : Setup
        The data, model and reference.
    max_depth : int
        The tree's depth.
    min_samples_leaf : int, optional
        The smallest leaf (default: a share of the test rows).
    seed : int
        The tree's seed.

    Returns
    -------
    ErrorTree
        Its leaves, highest error rate first.
    """
    rows = np.asarray(setup.test_rows, dtype=int)
    wrong = model_outcome(setup, rows).wrong
    leaf_min = min_samples_leaf or max(MIN_LEAF_ROWS, int(MIN_LEAF_SHARE * len(rows)))
    X, names = tree_inputs(setup, rows)
    tree = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=leaf_min, random_state=seed).fit(X, wrong)
    reached = tree.apply(X)
    leaves = []
    for node, filters in leaf_rules(tree, names, np.isnan(X).any(axis=0)).items():
        inside = reached == node
        errors = int(wrong[inside].sum())
        leaves.append(ErrorLeaf(int(node), filters, Cohort("leaf", filters).text(setup) if filters else "every row",
                                int(inside.sum()), errors, errors / max(1, int(inside.sum())),
                                errors / max(1, int(wrong.sum()))))
    leaves.sort(key=lambda leaf: (-leaf.error_rate, leaf.node))
    return ErrorTree(tuple(leaves), len(rows), int(wrong.sum()), error_words(setup), max_depth, leaf_min, seed)


def leaf_rules(tree: DecisionTreeClassifier, names: list[tuple[str, str | None]],
               has_missing: np.ndarray) -> dict[int, tuple[Filter, ...]]:
    """Each leaf's path from the root as filters (a numeric split ``x ≤ t`` / ``x > t``, "or missing" on the side
    missing values go where the column has any; a 0/1 column's split ``feature ≠ level`` / ``= level``)."""
    t = tree.tree_
    missing_left = getattr(t, "missing_go_to_left", np.zeros(t.node_count, dtype=bool))
    rules: dict[int, tuple[Filter, ...]] = {}
    stack = [(0, ())]
    while stack:
        node, path = stack.pop()
        if t.children_left[node] < 0:
            rules[node] = tightest(path)
            continue
        group, level = names[t.feature[node]]
        threshold = float(t.threshold[node])
        for child, left in ((t.children_left[node], True), (t.children_right[node], False)):
            if level is None:
                step = Filter(group, "<=" if left else ">", threshold,
                              missing=bool(has_missing[t.feature[node]]) and bool(missing_left[node]) == left)
            else:
                step = Filter(group, "!=" if left else "=", level)
            stack.append((child, path + (step,)))
    return rules


def tightest(path: tuple[Filter, ...]) -> tuple[Filter, ...]:
    """A path's filters with repeated numeric bounds on one feature merged into the tightest (``x ≤ 8.5 and x ≤ 4``
    is ``x ≤ 4``; a missing value passes only if it passed both), in order of first use."""
    merged: dict[tuple, Filter] = {}
    for f in path:
        key = (f.feature, f.op) if f.op in ("<=", ">") else (f.feature, f.op, f.value)
        if key in merged and f.op in ("<=", ">"):
            old = merged[key]
            value = min(old.value, f.value) if f.op == "<=" else max(old.value, f.value)
            f = Filter(f.feature, f.op, value, missing=old.missing and f.missing)
        merged[key] = f
    return tuple(merged.values())


def leaf_cohort(tree: ErrorTree, node: int, name: str | None = None) -> Cohort:
    """The cohort of the leaf's rows: its rule's filters (checked equal to the leaf's rows in the tests).

    Parameters
    ----------
    tree : ErrorTree
        The error tree.
    node : int
        A leaf's node number.
    name : str, optional
        The cohort's name.

    Returns
    -------
    Cohort
        The leaf's rows as a cohort.

    Raises
    ------
    IntakeError
        When ``node`` is not a leaf of the tree.
    """
    leaf = tree.leaf(node)
    return Cohort(name or f"error leaf {node} ({leaf.error_rate:.0%} wrong)", leaf.filters)
