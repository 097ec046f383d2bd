"""An account's alert rules, the groups they have seen, and the outbox of their alerts."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from data.tables.common import TZ, metadata, one_of

ALERT_KINDS = ("new", "surge")
DELIVERY_STATES = ("pending", "delivered", "failed", "dropped")

# An account's alert rules (migration 0019, docs/alerts.md): what makes a failure-mode group
# worth telling, the failureModes filters it is asked with, and where it is told. The signing
# secret is read back by the deliveries alone; `disabled_reason` says why a rule stopped.
alert_rules = sa.Table(
    "alert_rules",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("min_sessions", sa.Integer, nullable=False),
    sa.Column("window_hours", sa.Integer, nullable=False),
    sa.Column("factor", sa.Float, nullable=False),
    sa.Column("baseline_days", sa.Integer, nullable=False),
    sa.Column("statuses", ARRAY(sa.Text)),  # NULL: every status
    sa.Column("source_types", ARRAY(sa.Text)),  # NULL: every source type
    sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("disabled_reason", sa.Text),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),  # consecutive
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint(one_of("kind", ALERT_KINDS), name="kind"),
)

# The groups a rule has seen, kept across regroupings (docs/contract.md, "Alerts"): a group of
# a later evaluation is the kept group it shares most members with, when they share more than
# half of the smaller one's. `telling`: its current episode was told (a `surge` episode ends when
# the group no longer surges; a `new` group is told once); `alerted_at`: its last alert.
alert_groups = sa.Table(
    "alert_groups",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("rule_id", UUID(as_uuid=True), nullable=False),
    sa.Column("members", ARRAY(UUID(as_uuid=True)), nullable=False),
    sa.Column("representative", UUID(as_uuid=True), nullable=False),
    sa.Column("first_seen_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("seen_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("telling", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("alerted_at", TZ),
    sa.Column("alerts", sa.Integer, nullable=False, server_default="0"),
    sa.ForeignKeyConstraint(
        ["account_id", "rule_id"],
        ["alert_rules.account_id", "alert_rules.id"],
        name="alert_groups_rule_fkey",
        ondelete="CASCADE",
    ),
    sa.Index("alert_groups_rule_idx", "account_id", "rule_id"),
)

# The outbox: one row per alert, written in the transaction that decided it, delivered at
# least once. `webhook_id` is the alert's, the same on every attempt; `body` is what is signed.
alert_deliveries = sa.Table(
    "alert_deliveries",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("rule_id", UUID(as_uuid=True), nullable=False),
    sa.Column("group_id", UUID(as_uuid=True), nullable=False),
    sa.Column("webhook_id", sa.Text, nullable=False, unique=True),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("next_attempt_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("last_attempt_at", TZ),
    sa.Column("last_status", sa.Integer),  # the receiver's HTTP status (NULL: none came)
    sa.Column("last_error", sa.Text),
    sa.Column("response", sa.Text),  # at most 1 KB of the last answer's body
    sa.Column("delivered_at", TZ),
    sa.CheckConstraint(one_of("state", DELIVERY_STATES), name="state"),
    sa.ForeignKeyConstraint(
        ["account_id", "rule_id"],
        ["alert_rules.account_id", "alert_rules.id"],
        name="alert_deliveries_rule_fkey",
        ondelete="CASCADE",
    ),
    sa.Index("alert_deliveries_due_idx", "next_attempt_at", postgresql_where="state = 'pending'"),
    sa.Index("alert_deliveries_rule_idx", "account_id", "rule_id", "id"),
)
