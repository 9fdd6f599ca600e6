"""Share links kept through sign-in: a signed-out visitor's share link, held for a few minutes under a key their
browser carries through the sign-in (only hashes: SHA-256 of the key, and the share token's own hash)."""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending",
        sa.Column("key_hash", sa.LargeBinary, primary_key=True),  # SHA-256 of the browser's key
        sa.Column("share_hash", sa.LargeBinary, nullable=False),  # SHA-256 of the share token (records.share_hash)
        sa.Column("created", sa.Float, nullable=False))
    op.create_index("pending_created", "pending", ["created"])


def downgrade() -> None:
    op.drop_index("pending_created", "pending")
    op.drop_table("pending")
