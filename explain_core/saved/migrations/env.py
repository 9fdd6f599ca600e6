"""Alembic's environment: the migrations run on the connection (and in the transaction) the store passes in
``config.attributes["connection"]`` (:func:`explain_core.saved.schema.migrate`)."""
from alembic import context

context.configure(connection=context.config.attributes["connection"], render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
