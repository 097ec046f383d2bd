"""A bound on what makes validation expensive, checked before validation runs, in one pass
over the document's selections.

graphql-core's OverlappingFieldsCanBeMerged compares every pair of fields that share a
response name in one selection set, so its work grows with the square of their count: 240
copies of `viewer { name }` (962 tokens, under the token limit) took 1.2 to 2.8 s of
validation, on the event loop. A text's spaces vary at will, so the validation cache does not
help. Refused here, such a query costs one step per selection, and validation never sees it
(the way graphql-armor's max-aliases and cost limits refuse before graphql-js validates).

A second pass counts the selections each operation and fragment expands to once its fragments
are spread, each fragment counted once (a memo by name): `fragment F2 { ...F1 x10 }` up to
`F8` is 651 characters that expand to ten million fields, which a depth rule and the budgets'
walks expanded one by one (56 s on the event loop). The same pass measures each operation's
depth and the document's aliases (MAX_QUERY_DEPTH, MAX_ALIASES): our own bounds, refused
with our own words, so no library's message is read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from graphql import (
    DocumentNode,
    ExecutableDefinitionNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

# Selections (fields, fragment spreads, inline fragments) in one selection set; the
# console's widest has 17.
MAX_SELECTIONS = 100
# Fields of one response name in one selection set (graphql-core compares each pair of them).
MAX_SAME_NAME = 10
# Selections of an operation or a fragment once its fragments are spread, as many as a query
# of MAX_QUERY_TOKENS without fragments can hold: fragments never buy more work than tokens.
MAX_EXPANDED_SELECTIONS = 1000
# Levels of fields in one operation, through its fragments; introspection fields (`__schema`)
# and what is under them are not counted, so GraphiQL's introspection query fits.
MAX_QUERY_DEPTH = 12
# Aliased fields of the document's operations, through their fragments.
MAX_ALIASES = 30


@dataclass(slots=True)
class Reach:
    """What a selection set expands to: its selections, the deepest level below its own (0:
    none), and its aliased fields, fragments spread."""

    selections: int = 0
    depth: int = 0
    aliases: int = 0


_MEASURING = Reach()  # a fragment's reach while it is measured: met again, it spreads itself


class Bounded:
    """The first selection set past a bound in a document, found in one pass; `steps` counts
    the selections it read."""

    def __init__(self, document: DocumentNode) -> None:
        self.steps = 0
        self.operations: list[tuple[OperationDefinitionNode, Reach]] = []
        self.refusal: str | None = None  # past a selection bound
        self.over: tuple[str, str] | None = None  # past MAX_QUERY_DEPTH or MAX_ALIASES, and which
        self.cyclic = False  # a fragment spreads itself (validation refuses it)
        for selections in _selection_sets(document):
            self.refusal = self._judge(selections)
            if self.refusal is not None:
                return
        expanded = Expanded(document)
        self.steps += expanded.steps
        self.refusal, self.over, self.cyclic = expanded.refusal, expanded.over, expanded.cyclic
        self.operations = expanded.operations

    def selections_of(self, operation: OperationDefinitionNode) -> int:
        """The selections `operation` expands to, fragments spread (0 when not measured)."""
        return next((r.selections for o, r in self.operations if o is operation), 0)

    def first(self) -> tuple[str, str] | None:
        """The refusal and the bound that refused (selections, depth, aliases), if any."""
        return self.over if self.refusal is None else (self.refusal, "selections")

    def _judge(self, selections: SelectionSetNode) -> str | None:
        names: Counter[str] = Counter()
        for count, selection in enumerate(selections.selections, start=1):
            self.steps += 1
            if count > MAX_SELECTIONS:
                return (
                    f"selections: one selection set holds more than {MAX_SELECTIONS} fields and "
                    f"fragments; at most {MAX_SELECTIONS} (MAX_SELECTIONS): split the query"
                )
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                names[key] += 1
                if names[key] > MAX_SAME_NAME:
                    return (
                        f"`{key}`: selected more than {MAX_SAME_NAME} times in one selection "
                        f"set; at most {MAX_SAME_NAME} (MAX_SAME_NAME): ask it once, or under "
                        "aliases"
                    )
        return None


def _selection_sets(document: DocumentNode) -> Iterator[SelectionSetNode]:
    """Every selection set of the document's operations and fragments, each once."""
    stack: list[SelectionSetNode] = [
        d.selection_set for d in document.definitions if isinstance(d, ExecutableDefinitionNode)
    ]
    while stack:
        selections = stack.pop()
        yield selections
        for selection in selections.selections:
            if isinstance(selection, FieldNode | InlineFragmentNode) and selection.selection_set:
                stack.append(selection.selection_set)


class Expanded:
    """The first fragment or operation past MAX_EXPANDED_SELECTIONS once fragments are spread,
    and (`over`) the first operation deeper than MAX_QUERY_DEPTH, else more than MAX_ALIASES
    aliases, found in one pass: each selection of the document is read once, and a spread adds its
    fragment's reach, measured the first time it is met (`steps` counts the selections read)."""

    def __init__(self, document: DocumentNode) -> None:
        self.steps = 0
        self.refusal: str | None = None
        self.over: tuple[str, str] | None = None
        self.cyclic = False
        self.reaches: dict[str, Reach] = {}
        self.operations: list[tuple[OperationDefinitionNode, Reach]] = []
        self._fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        for name in self._fragments:
            if self._fragment(name).selections > MAX_EXPANDED_SELECTIONS:
                return
        self.operations = [
            (d, self._reach(d.selection_set))
            for d in document.definitions
            if isinstance(d, OperationDefinitionNode)
        ]
        self._judge(self.operations)

    def _judge(self, operations: list[tuple[OperationDefinitionNode, Reach]]) -> None:
        for definition, reach in operations:
            if reach.selections > MAX_EXPANDED_SELECTIONS:
                what = f"operation '{definition.name.value}'" if definition.name else "the query"
                self.refusal = _expanded_refusal(what, reach.selections)
                return
        for definition, reach in operations:
            if reach.depth > MAX_QUERY_DEPTH:
                name = definition.name.value if definition.name else "anonymous"
                self.over = (
                    f"operation '{name}': deeper than {MAX_QUERY_DEPTH} levels; at most "
                    f"{MAX_QUERY_DEPTH} (MAX_QUERY_DEPTH)",
                    "depth",
                )
                return
        aliases = sum(reach.aliases for _, reach in operations)
        if aliases > MAX_ALIASES:
            self.over = (
                f"the query: {aliases} aliases; at most {MAX_ALIASES} (MAX_ALIASES): split it",
                "aliases",
            )

    def _fragment(self, name: str) -> Reach:
        """What fragment `name` expands to (nothing for an unknown one, or one met again
        inside itself: validation refuses both)."""
        if name not in self.reaches:
            self.reaches[name] = _MEASURING
            definition = self._fragments.get(name)
            reach = Reach() if definition is None else self._reach(definition.selection_set)
            self.reaches[name] = reach
            if reach.selections > MAX_EXPANDED_SELECTIONS and self.refusal is None:
                self.refusal = _expanded_refusal(f"fragment `{name}`", reach.selections)
        elif self.reaches[name] is _MEASURING:
            self.cyclic = True
        return self.reaches[name]

    def _reach(self, selection_set: SelectionSetNode) -> Reach:
        """The selection set's reach; a field's selections are one level below it, those of an
        introspection field not counted in depth."""
        reach, stack = Reach(), [(selection_set, 0, True)]
        while stack:
            selections, level, counted = stack.pop()
            for selection in selections.selections:
                self.steps += 1
                reach.selections += 1
                if counted:
                    reach.depth = max(reach.depth, level)
                if isinstance(selection, FragmentSpreadNode):
                    inner = self._fragment(selection.name.value)
                    reach.selections += inner.selections
                    reach.aliases += inner.aliases
                    if counted:
                        reach.depth = max(reach.depth, level + inner.depth)
                elif isinstance(selection, InlineFragmentNode):
                    stack.append((selection.selection_set, level, counted))
                elif isinstance(selection, FieldNode):
                    reach.aliases += selection.alias is not None
                    if selection.selection_set:
                        deeper = counted and not selection.name.value.startswith("__")
                        stack.append((selection.selection_set, level + 1, deeper))
        return reach


def _expanded_refusal(what: str, count: int) -> str:
    return (
        f"{what}: expands to {count} selections once its fragments are spread; at most "
        f"{MAX_EXPANDED_SELECTIONS} (MAX_EXPANDED_SELECTIONS): spread fewer fragments"
    )
