"""The dashboard's shared pieces: the session and its cached computations (:mod:`.shared`), widget callbacks,
Stop buttons, uploads, saved analyses and the parts several pages draw. The page scripts themselves are in
``app_pages/``; Streamlit's private internals are reached only through :mod:`.streamlit_runtime`."""
