"""Signed-in users and files kept in a folder: a record's user (SHA-256 of their identity; NULL without sign-in)
and whether a file's bytes are in the configured folder (then ``data`` is empty)."""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("records", sa.Column("user_hash", sa.LargeBinary))
    op.create_index("records_user", "records", ["user_hash"])
    op.add_column("files", sa.Column("in_folder", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("files") as batch:
        batch.drop_column("in_folder")
    op.drop_index("records_user", "records")
    with op.batch_alter_table("records") as batch:
        batch.drop_column("user_hash")
