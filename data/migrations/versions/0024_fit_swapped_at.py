"""fit swapped at: lexical_fits.swapped_at

When the account's fit was swapped in, if it was staged (indexer/staged.py); its staging time
stays `fitted_at`. A new fit then rests, as a merge does: it is due only once the fit has
been served REFIT_REST times as long as it was staged (indexer/fitting.py). Under a stream
that grows an account by a quarter every ten minutes, a refit began eleven minutes after the
last one, so the account was staged about half the time, each pass embedding its running
sessions twice. NULL (a fit installed at once, or before this revision): no rest, as before.

Revision ID: 0024
Revises: 0023
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0024'
down_revision: str | None = '0023'


def upgrade() -> None:
    op.add_column(
        'lexical_fits', sa.Column('swapped_at', sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column('lexical_fits', 'swapped_at')
