"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-30 00:33:38.378946
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql
import pgvector.sqlalchemy.vector

revision: str = '0001'
down_revision: str | None = None


def upgrade() -> None:
    op.create_table('accounts',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('account_id', name=op.f('accounts_pkey'))
    )
    op.create_table('embedding_models',
    sa.Column('model_identity', sa.Text(), nullable=False),
    sa.Column('dimensions', sa.Integer(), nullable=False),
    sa.Column('index_name', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.PrimaryKeyConstraint('model_identity', name=op.f('embedding_models_pkey')),
    sa.UniqueConstraint('index_name', name=op.f('embedding_models_index_name_key'))
    )
    op.create_table('account_features',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('feature', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('account_features_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', 'feature', name=op.f('account_features_pkey'))
    )
    op.create_table('api_keys',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('key_hash', sa.LargeBinary(), nullable=False),
    sa.Column('scopes', postgresql.ARRAY(sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('api_keys_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', 'key_hash', name=op.f('api_keys_pkey'))
    )
    op.create_index('api_keys_key_hash_idx', 'api_keys', ['key_hash'], unique=True)
    op.create_table('api_usage',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('kind', sa.Text(), nullable=False),
    sa.Column('runtime_session_id', sa.UUID(), nullable=True),
    sa.Column('provider', sa.Text(), nullable=False),
    sa.Column('model', sa.Text(), nullable=False),
    sa.Column('units', sa.Integer(), server_default='0', nullable=False),
    sa.Column('cost_usd', sa.Numeric(precision=12, scale=6), server_default='0', nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("kind IN ('gateway', 'embedding')", name=op.f('api_usage_kind_check')),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('api_usage_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', 'id', name=op.f('api_usage_pkey'))
    )
    op.create_index('api_usage_spend_idx', 'api_usage', ['account_id', 'kind', 'occurred_at'], unique=False)
    op.create_table('embedding_settings',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('provider', sa.Text(), nullable=False),
    sa.Column('model', sa.Text(), nullable=False),
    sa.Column('dimensions', sa.Integer(), nullable=False),
    sa.Column('scope', sa.Text(), nullable=False),
    sa.Column('daily_cap_usd', sa.Numeric(precision=12, scale=4), nullable=True),
    sa.Column('model_identity', sa.Text(), sa.Computed("provider || ':' || model || '@' || dimensions::text", persisted=True), nullable=True),
    sa.Column('degraded_reason', sa.Text(), nullable=True),
    sa.Column('degraded_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('updated_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
    sa.CheckConstraint("scope IN ('summaries_only', 'full')", name=op.f('embedding_settings_scope_check')),
    sa.CheckConstraint('dimensions BETWEEN 1 AND 16000', name=op.f('embedding_settings_dimensions_check')),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('embedding_settings_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', name=op.f('embedding_settings_pkey'))
    )
    op.create_table('runtime_sessions',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('source_type', sa.Text(), nullable=False),
    sa.Column('source_id', sa.Text(), nullable=False),
    sa.Column('reference', sa.Text(), nullable=False),
    sa.Column('status', sa.Text(), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_activity_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['account_id'], ['accounts.account_id'], name=op.f('runtime_sessions_account_id_fkey')),
    sa.PrimaryKeyConstraint('account_id', 'id', name=op.f('runtime_sessions_pkey'))
    )
    op.create_index('runtime_sessions_recent_idx', 'runtime_sessions', ['account_id', sa.literal_column('started_at DESC'), sa.literal_column('id DESC')], unique=False)
    op.create_table('runtime_session_activity',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('runtime_session_id', sa.UUID(), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('kind', sa.Text(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('api_usage_id', sa.UUID(), nullable=True),
    sa.ForeignKeyConstraint(['account_id', 'runtime_session_id'], ['runtime_sessions.account_id', 'runtime_sessions.id'], name='runtime_session_activity_session_fkey'),
    sa.PrimaryKeyConstraint('account_id', 'id', name=op.f('runtime_session_activity_pkey'))
    )
    op.create_index('runtime_session_activity_session_idx', 'runtime_session_activity', ['account_id', 'runtime_session_id', 'ordinal'], unique=False)
    op.create_table('session_chunks',
    sa.Column('account_id', sa.UUID(), nullable=False),
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('runtime_session_id', sa.UUID(), nullable=False),
    sa.Column('source_kind', sa.Text(), nullable=False),
    sa.Column('source_id', sa.UUID(), nullable=True),
    sa.Column('chunk_index', sa.Integer(), nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('role', sa.Text(), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.LargeBinary(), nullable=True),
    sa.Column('redaction_state', sa.Text(), server_default='clear', nullable=False),
    sa.Column('embedding_state', sa.Text(), server_default='pending', nullable=False),
    sa.Column('embedding', pgvector.sqlalchemy.vector.VECTOR(), nullable=True),
    sa.Column('embedding_model', sa.Text(), nullable=True),
    sa.Column('embedded_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("embedding_state <> 'embedded' OR (embedding IS NOT NULL AND embedding_model IS NOT NULL)", name=op.f('session_chunks_embedded_has_vector_check')),
    sa.CheckConstraint("embedding_state IN ('pending', 'skipped', 'in_progress', 'embedded', 'failed')", name=op.f('session_chunks_embedding_state_check')),
    sa.CheckConstraint("redaction_state IN ('clear', 'redacted', 'metadata_only', 'withheld')", name=op.f('session_chunks_redaction_state_check')),
    sa.CheckConstraint("source_kind IN ('gateway_interaction', 'transcript_message', 'tool_call', 'browser_step', 'operator_note', 'session_summary', 'flow_log', 'artifact')", name=op.f('session_chunks_source_kind_check')),
    sa.ForeignKeyConstraint(['account_id', 'runtime_session_id'], ['runtime_sessions.account_id', 'runtime_sessions.id'], name='session_chunks_session_fkey'),
    sa.PrimaryKeyConstraint('account_id', 'id', name=op.f('session_chunks_pkey'))
    )
    op.create_index('session_chunks_comparable_idx', 'session_chunks', ['account_id', 'embedding_model', 'runtime_session_id'], unique=False, postgresql_where=sa.text("redaction_state = 'clear' AND embedding_state = 'embedded'"))
    op.create_index('session_chunks_session_idx', 'session_chunks', ['account_id', 'runtime_session_id', 'occurred_at', 'chunk_index'], unique=False)
    op.create_index('session_chunks_work_idx', 'session_chunks', ['account_id', 'embedding_state'], unique=False, postgresql_where=sa.text("embedding_state IN ('pending', 'in_progress')"))


def downgrade() -> None:
    op.drop_index('session_chunks_work_idx', table_name='session_chunks', postgresql_where=sa.text("embedding_state IN ('pending', 'in_progress')"))
    op.drop_index('session_chunks_session_idx', table_name='session_chunks')
    op.drop_index('session_chunks_comparable_idx', table_name='session_chunks', postgresql_where=sa.text("redaction_state = 'clear' AND embedding_state = 'embedded'"))
    op.drop_table('session_chunks')
    op.drop_index('runtime_session_activity_session_idx', table_name='runtime_session_activity')
    op.drop_table('runtime_session_activity')
    op.drop_index('runtime_sessions_recent_idx', table_name='runtime_sessions')
    op.drop_table('runtime_sessions')
    op.drop_table('embedding_settings')
    op.drop_index('api_usage_spend_idx', table_name='api_usage')
    op.drop_table('api_usage')
    op.drop_index('api_keys_key_hash_idx', table_name='api_keys')
    op.drop_table('api_keys')
    op.drop_table('account_features')
    op.drop_table('embedding_models')
    op.drop_table('accounts')
