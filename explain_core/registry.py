"""One plug per explanation method: a :class:`Method` record says everything the surfaces need (its label, how it
computes a row's result, its figure and reading, its report section, its command-line options, its audit columns
and its JSON type), and every surface loops over :func:`methods` — the Report page's sections, the PDF, the
``report`` and ``audit`` commands' options, the audit table's columns and the JSON files.

As shap's, interpret's and alibi's explainers do, a method plugs in by one :func:`register` call; the built-in
methods are registered by :mod:`explain_core.methods`. This module is on the ground floor, so any floor reads the
registry; what a record points at (its compute, its figure) lives with the method.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .errors import IntakeError


@dataclass(frozen=True)
class Option:
    """One command-line option of a method (``report`` and ``audit`` add it; ``--flag`` fills ``dest``).

    Parameters
    ----------
    flag : str
        The option, e.g. ``"--tau"``.
    dest : str
        The field it fills (a field of :class:`~explain_core.parameters.Parameters` for the built-in methods).
    type : callable
        Converts the text.
    help : str
        One line of help.
    choices : tuple, optional
        The values allowed.
    metavar : str, optional
        The value's name in the help.
    """

    flag: str
    dest: str
    type: Callable[[str], Any] = str
    help: str = ""
    choices: tuple | None = None
    metavar: str | None = None


@dataclass(frozen=True)
class Section:
    """A method's part of the report: its title, what it holds (the preview's list) and the Report page's help.

    Parameters
    ----------
    title : str
        The section's title.
    contents : tuple of str
        What it holds.
    help : str
        The Report page's help for its checkbox.
    """

    title: str
    contents: tuple[str, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class AuditColumns:
    """A method's columns in an audit table, computed row by row.

    Parameters
    ----------
    fields : tuple of (str, pyarrow.DataType)
        The columns and their types.
    compute : callable
        ``compute(setup, query, label, params, memo) -> {column: value}`` for one row predicted ``label``
        (``memo``: a dict kept over one partition, for what several rows share).
    """

    fields: tuple[tuple[str, Any], ...]
    compute: Callable[..., dict]


@dataclass(frozen=True)
class Method:
    """One explanation method, as every surface sees it.

    Parameters
    ----------
    name : str
        Its key (a report section, a JSON file's part, an audit's method).
    label : str
        Its name in words.
    compute : callable
        ``compute(results) -> result``: the row's result from a lazy bundle of the row's results
        (:class:`~explain_core.methods.bundle.RowResults`: its ``setup``, ``query``, ``params`` and the other
        methods' results).
    parameters : str
        The part of :class:`~explain_core.parameters.Parameters` it reads (``params.sev``, …), or ``""``.
    figure : callable, optional
        ``figure(results) -> plotly Figure`` of its result (None: no figure).
    reading : callable, optional
        ``reading(results) -> str``: its result in plain words (None: no reading).
    section : Section, optional
        Its part of the report (None: shown only inside other sections).
    options : tuple of Option
        Its command-line options.
    audit : AuditColumns, optional
        Its columns in an audit table (None: not in audits).
    json_type : type, optional
        Its result's class (an :class:`~explain_core.results.Explanation`: ``to_json`` / ``from_json``).
    """

    name: str
    label: str
    compute: Callable[[Any], Any]
    parameters: str = ""
    figure: Callable[[Any], Any] | None = None
    reading: Callable[[Any], str] | None = None
    section: Section | None = None
    options: tuple[Option, ...] = ()
    audit: AuditColumns | None = None
    json_type: type | None = None


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Plug a method in (after the ones registered before it).

    Parameters
    ----------
    method : Method
        The method.

    Returns
    -------
    Method
        The same record.

    Raises
    ------
    IntakeError
        When another method has its name.
    """
    if method.name in _METHODS and _METHODS[method.name] is not method:
        raise IntakeError(f"A method named {method.name!r} is registered already.")
    _METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Take a method out (a test's toy method, for one).

    Parameters
    ----------
    name : str
        Its name.
    """
    _METHODS.pop(name, None)


def methods() -> tuple[Method, ...]:
    """Every registered method, in the order they were registered.

    Returns
    -------
    tuple of Method
        The methods.
    """
    return tuple(_METHODS.values())


def method(name: str) -> Method:
    """The method of that name.

    Parameters
    ----------
    name : str
        Its name.

    Returns
    -------
    Method
        The method.

    Raises
    ------
    IntakeError
        When none has that name.
    """
    if name not in _METHODS:
        raise IntakeError(f"Unknown method {name!r}; choose from {', '.join(_METHODS)}.")
    return _METHODS[name]
