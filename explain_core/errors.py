"""The package's errors, every class of them, and the helpers that check a choice or a number.

``ExplainError`` is the base of every error this package raises on purpose. ``IntakeError`` (also a
``ValueError``) is a dataset, model, file or setting that cannot be used: its message says what is wrong
and how to fix it, and the app shows it as it is. ``ComputationError`` is a run that cannot give an
honest result (a model score that is NaN, a budget that ran out before anything was found). Below them: the
intake's errors (an untrusted model file, a model that raised while scoring, a crashed sandboxed worker, a saved
analysis not found), a cancelled training run, the exact engines' signals that a model is not theirs to read
(:class:`Unreadable`, :class:`Unsupported`), the sandbox's wire errors, a figure that could not be drawn and a bad
command-line argument.
"""
from __future__ import annotations

import functools
import math
import numbers
import re
from typing import Iterable, Sequence

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


class UntrustedModelError(IntakeError):
    """A model file that would run arbitrary code (pickle) or holds types nobody vetted (skops).

    ``types`` lists the unvetted but harmless-looking types of a skops file that the user may confirm
    (empty when nothing can be confirmed: a pickle, or a file with a refused type); ``checks`` holds the
    verdict on every type that is not on skops' own trusted list, with what each name resolves to.

    Parameters
    ----------
    message : str
        What was refused and what the user may do.
    types : sequence of str
        The types the user may confirm.
    checks : sequence
        The verdict on each type off skops' trusted list.
    """

    def __init__(self, message: str, types: Sequence[str] = (), checks: Sequence = ()):
        super().__init__(message)
        self.types = tuple(types)
        self.checks = tuple(checks)


class ModelCallError(IntakeError):
    """The model itself raised while scoring rows (wrong dtypes, unseen categories, a failing custom step)."""


class ModelCrashed(IntakeError):
    """The model's worker died, ran out of time or memory, or answered with malformed data; the server and every
    other session are untouched and the next request starts a new worker."""


class RemoteError(Exception):
    """An error the model raised inside its worker (the worker itself goes on); ``info`` is the worker's report:
    ``kind`` ("intake", "model" or "memory"), ``message``, and for a refused skops file ``types``/``checks``."""

    def __init__(self, info):
        self.info = info if isinstance(info, dict) else {"kind": "model", "message": str(info)[:2000]}
        super().__init__(str(self.info.get("message", ""))[:2000])


class RemoteModelError(Exception):
    """An exception the model's own code raised in its worker (``remote_type`` is its class's name)."""

    def __init__(self, remote_type: str, message: str):
        self.remote_type = remote_type
        super().__init__(message)


class ProtocolError(Exception):
    """The worker sent something that is not a well-formed reply."""


class SavedNotFound(IntakeError):
    """A token that names nothing on this server: mistyped, cut short, deleted or expired."""


class TrainingCancelled(ExplainError):
    """The caller cancelled a training run (its ``cancel`` callable returned True)."""


class RenderError(RuntimeError):
    """A figure could not be drawn with the requested renderer."""


class Unreadable(Exception):
    """The model's structure is not usable by the exact engines (the message says why)."""


class Unsupported(Exception):
    """The model is not one the exact engines read (the message says why, for the fallback's note)."""


class UsageError(Exception):
    """A bad command-line argument: reported in one line, exit status 2."""
