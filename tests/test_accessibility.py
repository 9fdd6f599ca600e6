"""Accessibility by construction: WCAG 2.1 contrast of every text colour the app and its figures set, in both themes
(the Streamlit theme of .streamlit/config.toml, the figures' template and the labels drawn on marks), the charts'
text following the theme, and nothing fetched from another host. The rendered colours are measured in a real browser
by tests/test_browser_accessibility.py."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from explain_core.views.style import LABEL_COLOURS, TEMPLATE, TEXT, contrast, luminance, text_on

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
AA = 4.5  # normal text, WCAG 2.1 SC 1.4.3
CONTROLS = 3.0  # a control against its background, SC 1.4.11


def test_contrast_is_wcags_definition():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert luminance("#808080") == pytest.approx(0.2158605, rel=1e-6)  # sRGB 128: ((0.502 + 0.055) / 1.055)^2.4
    assert contrast("#808495", "#ffffff") == pytest.approx(3.72, abs=0.01)  # Streamlit's chart grey: the 3.72
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # the classic lightest AA grey on white


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_themes_text_reaches_aa_on_every_background(theme):
    colours = CONFIG["theme"][theme]
    for background in ("backgroundColor", "secondaryBackgroundColor"):
        assert contrast(colours["textColor"], colours[background]) >= AA, background
        assert contrast(colours["linkColor"], colours[background]) >= AA, background
    assert contrast("#ffffff", colours["primaryColor"]) >= AA  # a primary button's label
    assert contrast(colours["primaryColor"], colours["backgroundColor"]) >= CONTROLS
    # chart text takes the theme's text colour (app.py), on the chart's background, the theme's
    assert contrast(colours["textColor"], colours["backgroundColor"]) >= AA


def test_the_app_follows_the_browser_and_offers_both_themes():
    assert "base" not in CONFIG["theme"]  # no forced light theme
    assert {"light", "dark"} <= set(CONFIG["theme"])
    assert CONFIG["client"]["toolbarMode"] in ("viewer", "auto")  # the menu, with its theme choice, is shown


def test_chart_text_takes_the_themes_text_colour():
    """Streamlit's chart theme draws axis text in a fixed grey (3.72:1 on white): app.py's style gives axis ticks and
    titles, legends, annotations and bar labels the theme's text colour instead."""
    css = re.search(r"CHART_TEXT_CSS = \((.*?)\)\n", (ROOT / "app.py").read_text(), re.S).group(1)
    for selector in (".xtick", ".ytick", ".g-xtitle", ".g-ytitle", "legendtext", "annotation-text", "bartext"):
        assert selector in css, selector
    assert "fill: currentColor !important" in css


def test_the_figures_own_text_colours_reach_aa():
    """The template (the PDF's figures and any export) and every label drawn on a mark."""
    layout = TEMPLATE.layout
    assert contrast(layout.font.color, layout.paper_bgcolor if layout.paper_bgcolor != "white" else "#ffffff") >= AA
    from explain_core.views.model import CONFUSION_SCALE

    for _, cell in CONFUSION_SCALE:  # the confusion matrix's counts, dark on its light cells (both ends of the scale)
        assert contrast(TEXT, cell) >= AA, cell
    for colour in LABEL_COLOURS.values():  # white or dark, whichever reads better, on the label colours
        best = text_on(colour)
        assert contrast(best, colour) == max(contrast("#ffffff", colour), contrast(TEXT, colour))


def test_no_page_names_an_outside_host():
    """Icons, fonts and images are the server's own: no page or config points the browser elsewhere."""
    sources = [ROOT / "app.py", ROOT / ".streamlit" / "config.toml", *sorted((ROOT / "pages").glob("*.py"))]
    for path in sources:
        text = path.read_text()
        assert not re.search(r"https?://(?!localhost|127\.0\.0\.1)", text.replace("http://localhost:8501", "")), path
    app = (ROOT / "app.py").read_text()
    assert 'ICON = Path(__file__).parent / "static" / "favicon.svg"' in app and (ROOT / "static/favicon.svg").exists()
    assert "page_icon=ICON" in app
