"""The package's errors: one base class, input errors under it, and one helper for checking a choice.

``ExplainError`` is the base of every error this package raises on purpose. ``IntakeError`` (also a
``ValueError``) is a dataset, model, file or setting that cannot be used: its message says what is wrong
and how to fix it, and the app shows it as it is. ``ComputationError`` is a run that cannot give an
honest result (a model score that is NaN, a budget that ran out before anything was found).
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from typing import Iterable

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ExplainError(Exception):
    """Base class of the errors explain_core raises on purpose."""


class IntakeError(ExplainError, ValueError):
    """A dataset, model or setting that cannot be used; the message says what is wrong and how to fix it."""


class ComputationError(ExplainError, RuntimeError):
    """A method that cannot give an honest result on these inputs; the message names the method and why."""


def one_line(exc: BaseException, limit: int | None = 300) -> str:
    """An exception's message as one line of plain text (whitespace collapsed, terminal colour codes removed, cut
    at ``limit`` characters), or its type's name when it has none."""
    text = " ".join(ANSI.sub("", str(exc)).split()) or type(exc).__name__
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def check_choice(value, options: Iterable, what: str):
    """``value`` when it is one of ``options``, else an :class:`IntakeError` naming the options.

    ``what`` is a lower-case noun phrase (``"model kind"``)."""
    options = tuple(options)
    if value not in options:
        raise IntakeError(f"Unknown {what} {value!r}; the {what} must be one of: {', '.join(map(str, options))}.")
    return value


def check_count(value, least: int, what: str) -> None:
    """An :class:`IntakeError` unless ``value`` is a whole number (an int, not a float or a bool) ≥ ``least``;
    ``what`` names it as the page and the command line do (``"k"``, ``"The number of LIME samples"``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise IntakeError(f"{what} must be a whole number of at least {least:,}, not {value!r}.")


def check_between(value, what: str, low: float, high: float = math.inf, *, above: bool = False,
                  below: bool = False) -> None:
    """An :class:`IntakeError` unless ``low ≤ value ≤ high`` (strictly above ``low`` with ``above``, strictly
    below ``high`` with ``below``); NaN is never in range."""
    inside = (value > low if above else value >= low) and (value < high if below else value <= high)
    if not inside:
        closed = math.isfinite(high) and not below
        raise IntakeError(f"{what} must be in {'(' if above else '['}{low:g}, {high:g}{']' if closed else ')'}, "
                          f"not {value!r}.")


class NonFiniteScores(ComputationError):
    """The model scored some evaluated rows as NaN or ±inf: the method stops instead of counting them as a class.

    ``count`` of ``total`` rows in one model call; ``method`` names the method that was running (set by
    :func:`names_method`).

    Parameters
    ----------
    count : int
        Rows scored NaN or ±inf.
    total : int
        Rows in the model call.
    method : str
        The method that was running.
    """

    def __init__(self, count: int, total: int, method: str = ""):
        self.count, self.total, self.method = int(count), int(total), method
        during = f" while computing {method}" if method else ""
        super().__init__(f"The model returned NaN or infinite scores for {count:,} of {total:,} rows{during}; "
                         "those rows cannot be given a class, so the result is not shown. Check the model's handling "
                         "of missing or unusual values (rows mixing this row and the reference, or the references).")


def names_method(method: str):
    """Decorator: a :class:`NonFiniteScores` raised inside names ``method`` (the innermost named method wins)."""
    def decorate(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except NonFiniteScores as exc:
                if exc.method:
                    raise
                raise NonFiniteScores(exc.count, exc.total, method) from None
        return run
    return decorate
