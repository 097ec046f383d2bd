"""live ingest: the spans the OTLP receiver stored, and the sessions changed since chunked

`otlp_spans` holds each span the live receiver (POST /v1/traces) acknowledged, keyed by
account, trace and span: an exporter that sends a batch again stores nothing twice. A
session's turns are made again from its spans as they arrive. `session_changes` names the
sessions whose turns changed since they were chunked, and from which turn on: the indexer
chunks them from their last passage before it, and leaves their earlier chunks (their ids and
vectors) as they are. `runtime_sessions_running_idx` finds the running sessions gone idle.

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision: str = '0017'
down_revision: str | None = '0016'


def upgrade() -> None:
    op.create_table(
        'otlp_spans',
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('trace_id', sa.Text(), nullable=False),
        sa.Column('span_id', sa.Text(), nullable=False),
        sa.Column('parent_span_id', sa.Text(), nullable=False),
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('operation', sa.Text(), nullable=False),
        sa.Column('start_ns', sa.Numeric(24, 0), nullable=False),
        sa.Column('end_ns', sa.Numeric(24, 0), nullable=False),
        sa.Column('failed', sa.Boolean(), nullable=False),
        sa.Column('service', sa.Text(), nullable=False),
        sa.Column('conversation', sa.Text(), nullable=True),
        sa.Column('session_key', sa.Text(), nullable=False),
        sa.Column('runtime_session_id', sa.Uuid(), nullable=False),
        sa.Column('turns', sa.LargeBinary(), nullable=True),
        sa.Column(
            'received_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ['account_id'], ['accounts.account_id'], name='otlp_spans_account_id_fkey'
        ),
        sa.PrimaryKeyConstraint('account_id', 'trace_id', 'span_id', name='otlp_spans_pkey'),
    )
    op.create_index(
        'otlp_spans_session_idx', 'otlp_spans', ['account_id', 'runtime_session_id']
    )
    op.create_table(
        'session_changes',
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('runtime_session_id', sa.Uuid(), nullable=False),
        sa.Column('from_ordinal', sa.Integer(), nullable=False),
        sa.Column(
            'changed_at', sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ['account_id', 'runtime_session_id'],
            ['runtime_sessions.account_id', 'runtime_sessions.id'],
            name='session_changes_session_fkey',
        ),
        sa.PrimaryKeyConstraint(
            'account_id', 'runtime_session_id', name='session_changes_pkey'
        ),
    )
    op.create_index(
        'runtime_sessions_running_idx',
        'runtime_sessions',
        ['last_activity_at'],
        postgresql_where=sa.text("status = 'running'"),
    )


def downgrade() -> None:
    op.drop_index('runtime_sessions_running_idx', table_name='runtime_sessions')
    op.drop_table('session_changes')
    op.drop_table('otlp_spans')
