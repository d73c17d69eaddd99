"""Alembic environment: runs on the connection landbot hands it (see store/migrate.py)."""

from alembic import context

from landbot.store.tables import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,  # SQLite cannot ALTER most things; batch mode copies the table
)
with context.begin_transaction():
    context.run_migrations()
