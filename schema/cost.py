"""The Cost of a GraphQL request, priced once from its parsed query before anything runs, in
one walk of the operation's fields (through fragments, less what `@skip`/`@include` leave out
with its variables), after the bound on its selections (schema/selection_bound.py):

- seats: the most any field it asks costs in the fair queue (`failureModes` 3;
  `searchSessions`, `runtimeSessions`, or `similarSessions` asked more than once, 2; else 1);
- comparisons: each comparing field (`similarSessions`, its `timeline`, `searchSessions`)
  costs the most times it can run (1 under `runtimeSession`, `first` under `runtimeSessions`,
  times `limit` under a comparison's or a search's results; `failureModes` the whole
  budget), and fields are granted in the order the query names them while the budget lasts.
  A field that does not fit is refused whole; the fields granted keep their data;
- replay turns: each replay field's `first` times the most sessions it can run for;
- selections: the operation's selections, fragments spread."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import strawberry
from graphql import (
    BooleanValueNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)
from graphql.execution.values import get_variable_values
from graphql.utilities import get_operation_ast
from strawberry.extensions import FieldExtension

from resolvers.budgets import MAX_SIMILAR_PER_REQUEST, Cost, Path, Refusal
from resolvers.context import Context
from schema.selection_bound import Bounded

Site = tuple[str, str]  # (parent type, field name)
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
REPLAY_FIELDS = {("RuntimeSession", "replay"), ("RuntimeSession", "replayPage")}
# What a request holds in the fair queue, by what it asks: the failure modes compare a
# window's sessions in one pass (a connection and a core for seconds); a search embeds a text
# and looks it up on both legs; a page of sessions, or several comparisons in one query, reads
# and compares many sessions at once.
WHOLE_PASS, MANY, ONE = 3, 2, 1
SEATS = {"failureModes": WHOLE_PASS, "searchSessions": MANY, "runtimeSessions": MANY}


class Granted(FieldExtension):
    """A comparing field (one of BUDGETED) runs only when the request's Cost granted it:
    LimitExceeded, before its resolver, otherwise."""

    async def resolve_async(
        self,
        next_: Callable[..., Awaitable[Any]],
        source: Any,
        info: strawberry.Info[Context, None],
        **kwargs: Any,
    ) -> Any:
        path = tuple(key for key in info.path.as_list() if isinstance(key, str))
        info.context.budget.require(path)
        return await next_(source, info, **kwargs)


def price(
    schema: GraphQLSchema,
    document: DocumentNode,
    bounded: Bounded,
    operation_name: str | None = None,
    variables: dict[str, Any] | None = None,
    limit: int = MAX_SIMILAR_PER_REQUEST,
) -> Cost:
    """The Cost of running `operation_name` of the document with these variables (as sent):
    a refusal when the document is past a bound; one seat and nothing granted when no
    operation can run (validation then says why); at most `limit` comparisons granted."""
    if (first := bounded.first()) is not None:
        return Cost(refusal=Refusal(*first))
    operation = get_operation_ast(document, operation_name)
    if operation is None or bounded.cyclic:
        return Cost()
    coerced = get_variable_values(schema, operation.variable_definitions or (), variables or {})
    planned = not isinstance(coerced, list)  # else execution answers what is wrong with them
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    values = coerced.coerced if not isinstance(coerced, list) else {}
    tally = Tally(limit)
    walk(schema, operation, fragments, values, tally)
    cost = tally.cost(bounded.selections_of(operation))
    return cost if planned else Cost(seats=cost.seats, selections=cost.selections)


@dataclass(slots=True)
class Tally:
    """What the walk met: the comparing fields granted within `limit`, the replay turns, and
    the fields by name (the seats)."""

    limit: int
    spent: int = 0
    turns: int = 0
    granted: set[Path] = field(default_factory=set)
    names: Counter[str] = field(default_factory=Counter)

    def visit(self, site: Site, path: Path, runs: int, refused_above: bool) -> bool:
        """Count a field met `runs` times at most; False when it is a comparing field refused
        (nothing under it is granted then)."""
        if site not in BUDGETED or refused_above:
            return not refused_above
        cost = self.limit if site in WHOLE_BUDGET else runs
        if self.spent + cost > self.limit:
            return False
        self.spent += cost
        self.granted.add(path)
        return True

    def seats(self) -> int:
        asked = [SEATS.get(name, ONE) for name in self.names]
        return max([ONE, *asked, MANY if self.names["similarSessions"] > 1 else ONE])

    def cost(self, selections: int) -> Cost:
        return Cost(
            seats=self.seats(),
            granted=frozenset(self.granted),
            comparisons=self.spent,
            replay_turns=self.turns,
            selections=selections,
        )


def walk(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
    tally: Tally,
) -> None:
    """Walk the operation's fields in the order the query names them, each with the most
    times it can run (its parent's runs, times the items of a bounded list), into `tally`."""

    def fields(
        parent: GraphQLObjectType,
        selections: list[SelectionSetNode],
        path: Path,
        runs_of: tuple[int, int],
        refused_above: bool,
    ) -> None:
        """Fields under `parent`, which runs `n` times; its bounded lists hold `per_item`."""
        n, per_item = runs_of
        for key, nodes in _fields(selections, fragments, variables).items():
            name = nodes[0].name.value
            tally.names[name] += len(nodes)
            definition = parent.fields.get(name)
            if definition is None:  # __typename, or a field of a fragment on another type
                continue
            here, site = (*path, key), (parent.name, name)
            runs = n * per_item if site in BOUNDED_LISTS else n
            refused = not tally.visit(site, here, runs, refused_above)
            if site in REPLAY_FIELDS:
                tally.turns += runs * int_argument(definition, nodes[0], "first", variables)
            items = 1
            if site in FAN_OUT:
                items = int_argument(definition, nodes[0], FAN_OUT[site], variables)
            child = get_named_type(definition.type)
            subsets = [node.selection_set for node in nodes if node.selection_set]
            if isinstance(child, GraphQLObjectType) and subsets:
                fields(child, subsets, here, (runs, items), refused)

    root = schema.query_type
    assert root is not None
    fields(root, [operation.selection_set], (), (1, 1), False)


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
