"""One Alembic revision per change of the saved analyses' schema, oldest first."""
