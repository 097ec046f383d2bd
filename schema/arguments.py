"""The ranked lists' GraphQL arguments, derived from their one declaration
(resolvers.arguments.RANKED_ARGUMENTS): a field resolver taking `**ranked` is given them as
parameters, so strawberry declares them, and the values come back checked."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import strawberry
from strawberry.utils.str_converters import to_camel_case

from resolvers.arguments import RANKED_ARGUMENTS, Argument, SimilarArgs
from resolvers.context import Context

Resolver = TypeVar("Resolver", bound=Callable[..., Any])
# Each field named by its GraphQL spelling, for the errors that name an argument.
GRAPHQL_NAMES = {a.field: to_camel_case(a.param) for a in RANKED_ARGUMENTS}


def _annotation(argument: Argument) -> Any:
    if argument.description is None:
        return argument.annotation
    return Annotated[argument.annotation, strawberry.argument(description=argument.description)]


def with_ranked_arguments(resolver: Resolver) -> Resolver:
    """The resolver, its `**ranked` replaced by the ranked-list arguments in their order."""
    signature = inspect.signature(resolver)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    ranked = [
        inspect.Parameter(
            a.param, inspect.Parameter.KEYWORD_ONLY, default=a.default, annotation=_annotation(a)
        )
        for a in RANKED_ARGUMENTS
    ]
    resolver.__signature__ = signature.replace(parameters=[*own, *ranked])  # type: ignore[attr-defined]
    return resolver


def ranked_args(
    info: strawberry.Info[Context, None],
    ranked: dict[str, Any],
    ranks: tuple[str, ...],
    texts_selected: bool,
) -> SimilarArgs:
    """The values of the ranked-list arguments, checked, for the list `ranks`; no passage text
    is read when no client selected one (`texts_selected`)."""
    values = {a.field: ranked[a.param] for a in RANKED_ARGUMENTS}
    values["include_match_text"] = values["include_match_text"] and texts_selected
    return SimilarArgs.checked(
        values, names=GRAPHQL_NAMES, ranked=ranks, cursors=info.context.cursors
    )
