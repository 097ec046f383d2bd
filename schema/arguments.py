"""What a ranked field's request asks: its GraphQL arguments, derived from their one
declaration (resolvers.arguments.RANKED_ARGUMENTS: a field resolver taking `**ranked` is given
them as parameters, so strawberry declares them, and the values come back checked), and what
the client selected under it, read so that no unasked column is read."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Annotated, Any, TypeVar

import strawberry
from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection
from strawberry.utils.str_converters import to_camel_case

from resolvers.arguments import (
    FAILURE_ARGUMENTS,
    RANKED_ARGUMENTS,
    REQUIRED,
    Argument,
    FailureArgs,
    SimilarArgs,
)
from resolvers.context import Context

Resolver = TypeVar("Resolver", bound=Callable[..., Any])
# Each field named by its GraphQL spelling, for the errors that name an argument.
GRAPHQL_NAMES = {a.field: to_camel_case(a.param) for a in RANKED_ARGUMENTS}
FAILURE_NAMES = {a.field: to_camel_case(a.param) for a in FAILURE_ARGUMENTS}
MEMBER_MATCH = ("members", "nodes", "match")  # a failure group's member's match


def _annotation(argument: Argument) -> Any:
    if argument.description is None:
        return argument.annotation
    return Annotated[argument.annotation, strawberry.argument(description=argument.description)]


def with_arguments(declared: tuple[Argument, ...]) -> Callable[[Resolver], Resolver]:
    """A decorator: the resolver, its `**keywords` replaced by the declared arguments in their
    order (one without a default, REQUIRED, is required)."""

    def decorate(resolver: Resolver) -> Resolver:
        signature = inspect.signature(resolver)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        added = [
            inspect.Parameter(
                a.param,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if a.default is REQUIRED else a.default,
                annotation=_annotation(a),
            )
            for a in declared
        ]
        resolver.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        return resolver

    return decorate


# The resolver, its `**ranked` replaced by the ranked-list arguments in their order; and the
# failure modes' arguments.
with_ranked_arguments = with_arguments(RANKED_ARGUMENTS)
with_failure_arguments = with_arguments(FAILURE_ARGUMENTS)


def ranked_request(
    info: strawberry.Info[Context, None],
    ranked: dict[str, Any],
    field: str,
    ranks: tuple[str, ...],
) -> tuple[SimilarArgs, bool]:
    """The ranked field's arguments, checked, for the list `ranks`, and whether the client
    selected a match's shared terms; no passage text is read when no client selected one."""
    terms = selects_shared_terms(info.selected_fields, field)
    values = {a.field: ranked[a.param] for a in RANKED_ARGUMENTS}
    values["include_match_text"] = values["include_match_text"] and (
        terms or selects_passage_text(info.selected_fields, field)
    )
    args = SimilarArgs.checked(
        values, names=GRAPHQL_NAMES, ranked=ranks, cursors=info.context.cursors
    )
    return args, terms


def failure_request(
    info: strawberry.Info[Context, None], given: dict[str, Any]
) -> tuple[FailureArgs, bool]:
    """failureModes' arguments, checked, and whether the client selected a shared term; no
    passage text is read when no client selected a text or a term under the field."""
    fields, groups = info.selected_fields, ("failureModes", "groups")
    terms = (
        selects(fields, *groups, "sharedTerms")
        or selects(fields, *groups, *MEMBER_MATCH, "sharedTerms")
        or selects(fields, "failureModes", "sharedTermsModel")
    )
    texts = terms or any(
        selects(fields, *groups, *MEMBER_MATCH, *leaf) for leaf in (("text",), ("probe", "text"))
    )
    values = {a.field: given[a.param] for a in FAILURE_ARGUMENTS}
    args = FailureArgs.checked(
        values,
        names=FAILURE_NAMES,
        account_id=info.context.principal.account_id,
        cursors=info.context.cursors,
    )
    return replace(args, include_match_text=texts), terms


def selects(selections: Iterable[Selection], *path: str) -> bool:
    """Whether the selection set asks for the field at `path` (through any fragment)."""
    if not path:
        return True
    for selection in selections:
        if isinstance(selection, FragmentSpread | InlineFragment):
            rest: tuple[str, ...] = path
        elif isinstance(selection, SelectedField) and selection.name == path[0]:
            rest = path[1:]
        else:
            continue
        if selects(selection.selections, *rest):
            return True
    return False


def selects_passage_text(selections: Iterable[Selection], field: str) -> bool:
    """Whether the client selected, under a ranked answer's field, a passage's text (or
    what is read from it: a search match's matched words), of its results or its nearest,
    of a match or of its probe."""
    return any(
        selects(selections, field, listed, "matches", *passage, leaf)
        for listed in ("results", "nearest")
        for passage in ((), ("probe",))
        for leaf in ("text", "matchedWords")
    )


def selects_shared_terms(selections: Iterable[Selection], field: str) -> bool:
    """Whether the client selected, under a ranked answer's field, a match's shared terms
    (of its results or its nearest) or the fit they were chosen with."""
    return selects(selections, field, "sharedTermsModel") or any(
        selects(selections, field, listed, "matches", "sharedTerms")
        for listed in ("results", "nearest")
    )
