"""The comparison budget of a GraphQL request, decided from the query before any comparison
runs: each comparing field (`similarSessions`, its `timeline`, `searchSessions`) costs the
most times it can run (1 under `runtimeSession`, `first` under `runtimeSessions`, times
`limit` under a comparison's or a search's results; `failureModes` the whole budget), and
fields are granted in the order the query names them while the budget lasts. A field that
does not fit is refused whole; the fields granted keep their data."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import strawberry
from graphql import (
    BooleanValueNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)

from resolvers.context import Context

Path = tuple[str, ...]  # response keys from the root, list indices left out
Site = tuple[str, str]  # (parent type, field name)
# Called for each field with where it is, the most times it can run and its node and
# definition; answers whether the fields under it are walked too.
Visit = Callable[[Site, Path, int, FieldNode, GraphQLField], bool]
BUDGETED = {
    ("RuntimeSession", "similarSessions"),
    ("SimilarSessions", "timeline"),
    ("Query", "searchSessions"),
    ("Query", "failureModes"),
}
# Fields that cost the whole budget wherever they are: failureModes compares up to
# SIMILAR_SESSIONS_FAILURE_MODES_SESSIONS sessions twice, bounded by that setting, so nothing
# else that compares runs beside it (nor a second one under another alias).
WHOLE_BUDGET = {("Query", "failureModes")}
# Fields whose lists hold at most as many items as one of their arguments says: the lists
# (BOUNDED_LISTS) right under them run once per item. Every list field that can lead to a
# session is one of these lists (tests/unit/test_budget.py).
FAN_OUT = {
    ("Query", "runtimeSessions"): "first",
    ("RuntimeSession", "similarSessions"): "limit",
    ("Query", "searchSessions"): "limit",
    ("Query", "failureModes"): "limit",
    ("FailureGroup", "members"): "first",
}
BOUNDED_LISTS = {
    ("RuntimeSessionConnection", "nodes"),
    ("RuntimeSessionConnection", "edges"),
    ("SimilarSessions", "results"),
    ("SimilarSessions", "nearest"),
    ("SessionSearch", "results"),
    ("SessionSearch", "nearest"),
    ("FailureModes", "groups"),
    ("FailureMemberPage", "nodes"),
}


def require_granted(info: strawberry.Info[Context, None]) -> None:
    """Raise LimitExceeded unless this comparing field was granted by the request's plan."""
    raw: GraphQLResolveInfo[Context] = info._raw_info  # the operation's fragments and schema types
    path = tuple(key for key in info.path.as_list() if isinstance(key, str))
    info.context.budget.require(path, lambda limit: granted(raw, limit))


def granted(raw: GraphQLResolveInfo[Context], limit: int) -> frozenset[Path]:
    """The paths of the comparing fields the request may run, within `limit`."""
    # graphql-core passes its VariableValues, strawberry's executor the coerced dict itself.
    values: Any = raw.variable_values
    variables: dict[str, Any] = getattr(values, "coerced", values)
    grants: set[Path] = set()
    spent = 0

    def visit(site: Site, path: Path, runs: int, *_: Any) -> bool:
        nonlocal spent
        if site not in BUDGETED:
            return True
        cost = limit if site in WHOLE_BUDGET else runs
        if spent + cost > limit:
            return False  # refused: nothing under it runs either
        spent += cost
        grants.add(path)
        return True

    walk(raw.schema, raw.operation, raw.fragments, variables, visit)
    return frozenset(grants)


def walk(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    visit: Visit,
) -> None:
    """Visit the operation's fields in the order the query names them, each with the most
    times it can run (its parent's runs, times the items of a bounded list)."""

    def fields(
        parent: GraphQLObjectType,
        selections: list[SelectionSetNode],
        path: Path,
        n: int,
        per_item: int,
    ) -> None:
        """Fields under `parent`, which runs `n` times; its bounded lists hold `per_item`."""
        for key, nodes in _fields(selections, fragments, variables).items():
            definition = parent.fields.get(nodes[0].name.value)
            if definition is None:  # __typename, or a field of a fragment on another type
                continue
            here, site = (*path, key), (parent.name, nodes[0].name.value)
            runs = n * per_item if site in BOUNDED_LISTS else n
            if not visit(site, here, runs, nodes[0], definition):
                continue
            items = 1
            if site in FAN_OUT:
                items = int_argument(definition, nodes[0], FAN_OUT[site], variables)
            child = get_named_type(definition.type)
            subsets = [node.selection_set for node in nodes if node.selection_set]
            if isinstance(child, GraphQLObjectType) and subsets:
                fields(child, subsets, here, runs, items)

    root = schema.query_type
    assert root is not None
    fields(root, [operation.selection_set], (), 1, 1)


def _fields(
    selection_sets: Iterable[SelectionSetNode],
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
) -> dict[str, list[FieldNode]]:
    """The field nodes of selection sets by response key, in the order the query names them,
    through fragments (whatever their type condition: an upper bound), less what `@skip` or
    `@include` leaves out with these variables (it never runs)."""
    found: dict[str, list[FieldNode]] = {}

    def visit(selection_set: SelectionSetNode) -> None:
        for selection in selection_set.selections:
            if not included(selection, variables):
                continue
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                found.setdefault(key, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                visit(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = fragments.get(selection.name.value)
                if fragment is not None:
                    visit(fragment.selection_set)

    for selection_set in selection_sets:
        visit(selection_set)
    return found


def included(selection: SelectionNode, variables: dict[str, Any]) -> bool:
    """Whether a selection runs, as `@skip(if:)` and `@include(if:)` say (both: neither
    skipped nor left out; a variable not given is false, as validation leaves it)."""
    for directive in selection.directives or ():
        name = directive.name.value
        if name not in ("skip", "include"):
            continue
        value: Any = False
        for argument in directive.arguments or ():
            if argument.name.value != "if":
                continue
            if isinstance(argument.value, BooleanValueNode):
                value = argument.value.value
            elif isinstance(argument.value, VariableNode):
                value = variables.get(argument.value.name.value, False)
        if (name == "skip") == (value is True):
            return False
    return True


def int_argument(
    definition: GraphQLField, node: FieldNode, name: str, variables: dict[str, Any]
) -> int:
    """An Int argument's value as the resolver will see it: literal, variable or default.
    (The request's arguments are validated before execution; out-of-bounds values are
    refused by the resolver itself, so only their size matters here.)"""
    value: Any = definition.args[name].default_value
    for argument in node.arguments or ():
        if argument.name.value != name:
            continue
        if isinstance(argument.value, IntValueNode):
            value = int(argument.value.value)
        elif isinstance(argument.value, VariableNode):
            value = variables.get(argument.value.name.value, value)
    return max(value, 0) if isinstance(value, int) else 0
