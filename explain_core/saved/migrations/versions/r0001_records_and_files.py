"""The first schema (the one the SQLite-only store wrote, ``PRAGMA user_version = 1``): records and their files.

A file written by that store already has these tables: it is stamped at this revision, not migrated through it.
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "records",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("token_hash", sa.LargeBinary, unique=True),  # a session: SHA-256 of its token
        sa.Column("owner_hash", sa.LargeBinary),  # a saved analysis: SHA-256 of its owner
        sa.Column("share_hash", sa.LargeBinary, unique=True),  # a saved analysis: SHA-256 of its share token
        sa.Column("salt", sa.LargeBinary),  # a saved analysis: its share token is HMAC(owner's key, salt)
        sa.Column("name", sa.Text, nullable=False, server_default=""),
        sa.Column("summary", sa.Text, nullable=False, server_default=""),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("used", sa.Float, nullable=False),
        sa.CheckConstraint("(token_hash IS NULL) != (share_hash IS NULL)"))
    op.create_index("records_owner", "records", ["owner_hash"])
    op.create_index("records_used", "records", ["used"])
    op.create_table(
        "files",
        sa.Column("record", sa.Integer, sa.ForeignKey("records.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("sha256", sa.Text, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False))


def downgrade() -> None:
    op.drop_table("files")
    op.drop_table("records")
