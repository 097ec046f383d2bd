"""A failure group's members, a page at a time, each with its closest tie inside the group
(the two passages, their similarity and shared terms); and a group's terms, those most of
its newest members' ties share. Passages and terms come through the request's DataLoaders,
so every group of a page is read in one statement each."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

from data.comparison_details import ChunkDetail
from resolvers.arguments import DEFAULT_MEMBERS, member_page_size
from resolvers.comparison.results import MatchResult
from resolvers.context import Context
from resolvers.failure_results import FailureGroupResult, FailureMemberResult, MemberPageResult
from resolvers.rules import failure_groups as rules
from resolvers.rules import ranking
from resolvers.rules.shared_terms import group_terms as common_terms
from resolvers.shared_terms import Terms

# A group's terms are those of its newest members' ties (the first page of its members).
GROUP_TERMS_SAMPLE = 20


# (this member's passage, the other member's passage)
Tie = tuple[UUID, UUID]


def tie(member: rules.Member) -> Tie | None:
    """(this member's passage, the other member's passage) of its closest tie."""
    if member.best is None:
        return None
    _, mine, theirs = member.best.seen_from(member.session_id)
    return (mine, theirs)


async def group_terms(
    context: Context, groups: Sequence[rules.Group]
) -> tuple[list[tuple[str, ...]], str | None]:
    """Each group's terms (named by at least half of its newest GROUP_TERMS_SAMPLE members'
    ties), all groups' ties in one batch; and the fitted model they were chosen with (None:
    the account has no fit, or no group has a tie)."""
    samples = [[tie(m) for m in g.members[:GROUP_TERMS_SAMPLE]] for g in groups]
    keys = list(dict.fromkeys(k for sample in samples for k in sample if k is not None))
    answers = dict(zip(keys, await context.loaders.terms.load_many(keys), strict=True))
    chosen = [
        common_terms([(answers[k].terms or ()) if k is not None else () for k in sample])
        for sample in samples
    ]
    return chosen, next((a.model for a in answers.values() if a.model is not None), None)


async def members_page(
    context: Context, group: FailureGroupResult, first: int, after: str | None, terms: bool
) -> MemberPageResult:
    """`first` members of the group (newest first) after the cursor `after` (a member cursor
    of this list), each with its closest tie; with `terms`, that tie's shared terms."""
    first = member_page_size(first)
    binding = group.args.members_binding(group.account_id)
    position = (
        None if after is None else context.cursors.open_failure_members(after, binding, "after")
    )
    members, more = rules.members_after(group.group, position, first)
    text = group.args.include_match_text
    ties = [tie(m) for m in members]
    chunks = [c for t in ties if t is not None for c in t]
    details = await context.loaders.passages.load_many([(c, text) for c in chunks])
    shown = {c: d for c, d in zip(chunks, details, strict=True) if d is not None}
    asked = [t for t in ties if t is not None] if terms and text else []
    answers = dict(zip(asked, await context.loaders.terms.load_many(asked), strict=True))
    nodes = tuple(
        _member(group, m, t, shown, answers.get(t) if t else None)
        for m, t in zip(members, ties, strict=True)
    )
    end = None
    if more and members:
        end = context.cursors.failure_members(members[-1].position, binding)
    return MemberPageResult(nodes, end, more)


async def first_pages(
    context: Context, groups: Sequence[FailureGroupResult], terms: bool
) -> list[MemberPageResult]:
    """Each group's first page of members (the default size), for an edge that answers them
    inline (REST); the pages share the request's loaders, so their passages and terms are
    read in one batch each."""
    return list(
        await asyncio.gather(
            *(members_page(context, g, DEFAULT_MEMBERS, None, terms) for g in groups)
        )
    )


def _member(
    group: FailureGroupResult,
    member: rules.Member,
    pair: Tie | None,
    shown: dict[UUID, ChunkDetail],
    answer: Terms | None,
) -> FailureMemberResult:
    session = group.sessions[member.session_id]
    link = member.best
    if link is None or pair is None or pair[0] not in shown or pair[1] not in shown:
        return FailureMemberResult(session, member.ties, None, None)
    other = link.seen_from(member.session_id)[0]
    mine, theirs = (_passage(shown[c], group.args.include_match_text) for c in pair)
    band = ranking.band(link.similarity, group.cuts[link.a])
    match = MatchResult.of(theirs, link.similarity, band, mine)
    if answer is not None and match.text is not None and mine.text is not None:
        match = replace(match, shared_terms=answer.terms)
    return FailureMemberResult(session, member.ties, other, match)


def _passage(chunk: ChunkDetail, with_text: bool) -> ChunkDetail:
    """A passage with its preview only when texts were asked and it is still clear."""
    kept = with_text and chunk.redaction_state == "clear"
    return chunk if kept or chunk.text is None else replace(chunk, text=None)
