"""Views: pure figure functions (result → plotly Figure) in one module per method (:mod:`.sev`, :mod:`.lens`,
:mod:`.linear`, :mod:`.compare`, the model's :mod:`.model` and the test rows' :mod:`.global_shap`), sharing one look
(:mod:`.style`); the wording of every page and report is :mod:`explain_core.vocabulary`'s. Importing this package
imports no plotting library; its figure modules do."""
