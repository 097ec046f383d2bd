"""alerts: an account's rules, the groups they have seen, and the outbox of their webhooks

`alert_rules` holds what makes a failure-mode group worth telling (`new`, `surge`) and the
webhook it is told at, with its signing secret; `alert_groups` the groups each rule has seen,
kept across regroupings (a later group is the kept one it shares most members with); and
`alert_deliveries` the outbox: each alert written in the transaction that decided it, its
`webhook_id` the same on every attempt, retried until delivered or 24 h old (docs/alerts.md).

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision: str = '0019'
down_revision: str | None = '0018'

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        'alert_rules',
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('id', sa.Uuid(), nullable=False),
        sa.Column('kind', sa.Text(), nullable=False),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('secret', sa.Text(), nullable=False),
        sa.Column('min_sessions', sa.Integer(), nullable=False),
        sa.Column('window_hours', sa.Integer(), nullable=False),
        sa.Column('factor', sa.Float(), nullable=False),
        sa.Column('baseline_days', sa.Integer(), nullable=False),
        sa.Column('statuses', ARRAY(sa.Text()), nullable=True),
        sa.Column('source_types', ARRAY(sa.Text()), nullable=True),
        sa.Column('enabled', sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column('disabled_reason', sa.Text(), nullable=True),
        sa.Column('failures', sa.Integer(), server_default='0', nullable=False),
        sa.Column('created_at', TZ, server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("kind IN ('new', 'surge')", name='alert_rules_kind_check'),
        sa.ForeignKeyConstraint(
            ['account_id'], ['accounts.account_id'], name='alert_rules_account_id_fkey'
        ),
        sa.PrimaryKeyConstraint('account_id', 'id', name='alert_rules_pkey'),
    )
    op.create_table(
        'alert_groups',
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('id', sa.Uuid(), nullable=False),
        sa.Column('rule_id', sa.Uuid(), nullable=False),
        sa.Column('members', ARRAY(sa.Uuid()), nullable=False),
        sa.Column('representative', sa.Uuid(), nullable=False),
        sa.Column('first_seen_at', TZ, server_default=sa.func.now(), nullable=False),
        sa.Column('seen_at', TZ, server_default=sa.func.now(), nullable=False),
        sa.Column('telling', sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column('alerted_at', TZ, nullable=True),
        sa.Column('alerts', sa.Integer(), server_default='0', nullable=False),
        sa.ForeignKeyConstraint(
            ['account_id', 'rule_id'],
            ['alert_rules.account_id', 'alert_rules.id'],
            name='alert_groups_rule_fkey',
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('account_id', 'id', name='alert_groups_pkey'),
    )
    op.create_index('alert_groups_rule_idx', 'alert_groups', ['account_id', 'rule_id'])
    op.create_table(
        'alert_deliveries',
        sa.Column('account_id', sa.Uuid(), nullable=False),
        sa.Column('id', sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column('rule_id', sa.Uuid(), nullable=False),
        sa.Column('group_id', sa.Uuid(), nullable=False),
        sa.Column('webhook_id', sa.Text(), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('state', sa.Text(), server_default='pending', nullable=False),
        sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
        sa.Column('created_at', TZ, server_default=sa.func.now(), nullable=False),
        sa.Column('next_attempt_at', TZ, server_default=sa.func.now(), nullable=False),
        sa.Column('last_attempt_at', TZ, nullable=True),
        sa.Column('last_status', sa.Integer(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('response', sa.Text(), nullable=True),
        sa.Column('delivered_at', TZ, nullable=True),
        sa.CheckConstraint(
            "state IN ('pending', 'delivered', 'failed', 'dropped')",
            name='alert_deliveries_state_check',
        ),
        sa.ForeignKeyConstraint(
            ['account_id', 'rule_id'],
            ['alert_rules.account_id', 'alert_rules.id'],
            name='alert_deliveries_rule_fkey',
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('account_id', 'id', name='alert_deliveries_pkey'),
        sa.UniqueConstraint('webhook_id', name='alert_deliveries_webhook_id_key'),
    )
    op.create_index(
        'alert_deliveries_due_idx',
        'alert_deliveries',
        ['next_attempt_at'],
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index(
        'alert_deliveries_rule_idx', 'alert_deliveries', ['account_id', 'rule_id', 'id']
    )


def downgrade() -> None:
    op.drop_table('alert_deliveries')
    op.drop_table('alert_groups')
    op.drop_table('alert_rules')
