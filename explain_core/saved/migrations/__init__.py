"""The store's schema migrations (Alembic): ``env.py`` runs them on the connection the store passes, and
``versions/`` holds one revision per schema change, so an upgrade keeps every saved analysis."""
