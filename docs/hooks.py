"""mkdocs hook: the docstrings' Sphinx roles (``:func:`name```, ``:class:``, ``:meth:``, ``:mod:``, ``:attr:``,
``:data:``, ``:exc:``), which mkdocstrings leaves as text, shown as the code name alone (``~`` and a leading ``.``
dropped, as Sphinx shows them)."""
from __future__ import annotations

import re

ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):<code>~?\.?([^<]*)</code>")


def on_page_content(html: str, **_) -> str:
    """The page's HTML with every role prefix removed."""
    return ROLE.sub(lambda found: f"<code>{found.group(1)}</code>", html)
