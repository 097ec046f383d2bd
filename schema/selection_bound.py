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
`F8` is 651 characters that expand to ten million fields, which graphql-core's depth rule and
the budgets' walks expanded one by one (56 s on the event loop)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

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


class Bounded:
    """The first selection set past a bound in a document, found in one pass; `steps` counts
    the selections it read."""

    def __init__(self, document: DocumentNode) -> None:
        self.steps = 0
        self.refusal: str | None = None
        for selections in _selection_sets(document):
            self.refusal = self._judge(selections)
            if self.refusal is not None:
                return
        expanded = Expanded(document)
        self.steps += expanded.steps
        self.refusal = expanded.refusal

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
    found in one pass: each selection of the document is read once, and a spread adds its
    fragment's count, counted the first time it is met (`steps` counts the selections read)."""

    def __init__(self, document: DocumentNode) -> None:
        self.steps = 0
        self.refusal: str | None = None
        self.counts: dict[str, int] = {}
        self._fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        for name in self._fragments:
            if self._fragment(name) > MAX_EXPANDED_SELECTIONS:
                return
        for definition in document.definitions:
            if isinstance(definition, OperationDefinitionNode):
                count = self._count(definition.selection_set)
                if count > MAX_EXPANDED_SELECTIONS:
                    what = (
                        f"operation '{definition.name.value}'" if definition.name else "the query"
                    )
                    self.refusal = _expanded_refusal(what, count)
                    return

    def _fragment(self, name: str) -> int:
        """The selections fragment `name` expands to (0 for an unknown one, or one met again
        inside itself: validation refuses both)."""
        if name not in self.counts:
            self.counts[name] = 0
            definition = self._fragments.get(name)
            count = 0 if definition is None else self._count(definition.selection_set)
            self.counts[name] = count
            if count > MAX_EXPANDED_SELECTIONS and self.refusal is None:
                self.refusal = _expanded_refusal(f"fragment `{name}`", count)
        return self.counts[name]

    def _count(self, selection_set: SelectionSetNode) -> int:
        total, stack = 0, [selection_set]
        while stack:
            for selection in stack.pop().selections:
                self.steps += 1
                total += 1
                if isinstance(selection, FragmentSpreadNode):
                    total += self._fragment(selection.name.value)
                elif (
                    isinstance(selection, FieldNode | InlineFragmentNode)
                    and selection.selection_set
                ):
                    stack.append(selection.selection_set)
        return total


def _expanded_refusal(what: str, count: int) -> str:
    return (
        f"{what}: expands to {count} selections once its fragments are spread; at most "
        f"{MAX_EXPANDED_SELECTIONS} (MAX_EXPANDED_SELECTIONS): spread fewer fragments"
    )
