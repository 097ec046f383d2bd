"""The parse and the validation of query texts, kept per schema and bounded by the kept texts'
total length, not their count (issue #37).

A parsed document takes about 110 bytes of memory per character of its text: the 962-token
query of 240 `viewer { name }` (3.8 KB) parses into 435 KB. Kept by count (strawberry's
`ParserCache` and `ValidationCache`, 256 texts), one client sending that text with a
different run of spaces each time pinned 111 MB until other texts pushed them out; the
fairness benchmark's tokens case left the server 44 MB larger. Kept by length, at most
QUERY_CACHE_CHARS characters of text are held (about 7 MB of documents), which is still
some 130 texts of the console's size (its largest query is about 500 characters): the texts a
client sends many times stay, and a repeated text is parsed, bounded and validated once.

Each request's operation is priced once (schema/cost.py) before it is validated; the Cost
the edge priced (similar_sessions/admission.py) is the one read here and by the budgets."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache
from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    Lexer,
    OperationDefinitionNode,
    Source,
    TokenKind,
    parse,
)
from strawberry.extensions import SchemaExtension
from strawberry.schema import schema as strawberry_schema
from strawberry.types.execution import ExecutionContext, ParseOptions

from config.settings import default_of
from resolvers.budgets import MAX_SIMILAR_PER_REQUEST, Cost, Refusal
from schema.cost import price
from schema.errors import limit_error
from schema.selection_bound import Bounded

QUERY_CACHE_CHARS = 64 * 1024
# Parsing stops past this many tokens, before validation, whose cost grows faster than the
# query (3,700 repeated fields took 1.6 s). The console's largest query has 94 tokens.
MAX_QUERY_TOKENS = 1000


class TooLong(Exception):
    """A text past MAX_QUERY_TOKENS: not parsed."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


@dataclass(slots=True)
class Kept:
    """A text's document, and its validation's errors once validated (None: not validated,
    the bound refused it, or not asked yet)."""

    chars: int
    document: DocumentNode
    bounded: Bounded | None = None
    errors: list[GraphQLError] | None = None


class Documents:
    """The schema's kept documents, the least recently used out past `chars` characters of
    text; used on the event loop only."""

    def __init__(self, chars: int = QUERY_CACHE_CHARS) -> None:
        self.chars = chars
        self._kept: LRUCache[str, Kept] = LRUCache(chars, getsizeof=lambda kept: kept.chars)

    def parsed(self, text: str, options: ParseOptions) -> DocumentNode:
        """The text's document; a GraphQLError when it does not parse, TooLong past
        MAX_QUERY_TOKENS (the parse stops there: the bound is ours, whatever `options` say)."""
        kept = self._kept.get(text)
        if kept is None:
            kept = Kept(len(text), bounded_parse(text))
            if kept.chars <= self.chars:
                self._kept[text] = kept
        return kept.document

    def bounded(self, text: str, document: DocumentNode) -> Bounded:
        """The bound's judgement of the text's document, kept with it."""
        kept = self._kept.get(text)
        if kept is None or kept.document is not document:
            return Bounded(document)
        if kept.bounded is None:
            kept.bounded = Bounded(document)
        return kept.bounded

    def cost(
        self,
        schema: GraphQLSchema,
        text: str,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        limit: int = MAX_SIMILAR_PER_REQUEST,
    ) -> Cost:
        """The Cost of a request (schema/cost.py), parsed through the kept documents; one seat
        and nothing granted when the text does not parse (where it runs, the parse says why)."""
        try:
            document = self.parsed(text, {})
        except (GraphQLError, TooLong):
            return Cost()
        bounded = self.bounded(text, document)
        return price(schema, document, bounded, operation_name, variables, limit)

    def validated(
        self,
        text: str,
        document: DocumentNode,
        validate: Callable[[], list[GraphQLError]],
    ) -> list[GraphQLError]:
        kept = self._kept.get(text)
        if kept is None or kept.document is not document:  # not kept (too long, or pushed out)
            return validate()
        if kept.errors is None:
            kept.errors = validate()
        return kept.errors

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def kept_chars(self) -> int:
        return int(self._kept.currsize)


class CachedParse(SchemaExtension):
    """Parsing, kept by text (Documents)."""

    def __init__(self, documents: Documents) -> None:
        super().__init__()
        self.documents = documents

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        try:
            context.graphql_document = self.documents.parsed(
                context.query or "", context.parse_options
            )
        except TooLong as too:  # answered as the parse's own errors are, before validation
            raise limit_error(too.refusal) from None
        yield


def bounded_parse(text: str) -> DocumentNode:
    """The text parsed, stopping past MAX_QUERY_TOKENS tokens (TooLong), before validation,
    whose cost grows faster than the query's."""
    try:
        return parse(text, max_tokens=MAX_QUERY_TOKENS)
    except GraphQLSyntaxError as error:
        if not stopped_at_the_bound(text, error):
            raise
    raise TooLong(
        Refusal(
            f"the query: more than {MAX_QUERY_TOKENS} tokens; at most {MAX_QUERY_TOKENS} "
            "(MAX_QUERY_TOKENS): split it",
            "tokens",
        )
    )


def stopped_at_the_bound(text: str, error: GraphQLSyntaxError) -> bool:
    """Whether the parse stopped for the token bound rather than a syntax error: more than
    MAX_QUERY_TOKENS tokens start where it stopped or before (read from the error's
    position, not its words; counted only on a text that failed)."""
    at = next(iter(error.positions or ()), len(text))
    lexer, count = Lexer(Source(text)), 0
    with contextlib.suppress(GraphQLSyntaxError):  # a token that does not lex ends the count
        while (token := lexer.advance()).kind != TokenKind.EOF and token.start <= at:
            count += 1
            if count > MAX_QUERY_TOKENS:
                return True
    return False


class PricedValidation(SchemaExtension):
    """Validation, kept by text (Documents), after the price: a document past a bound is
    refused (LIMIT_EXCEEDED, naming what and the bound) and not validated; a valid one that
    could read more than `replay_turns` turns (SIMILAR_SESSIONS_REPLAY_TURNS) is refused
    whole before it runs."""

    def __init__(
        self, documents: Documents, replay_turns: int = default_of("replay_turns")
    ) -> None:
        super().__init__()
        self.documents, self.replay_turns = documents, replay_turns

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is None:
            yield
            return
        cost = self._cost(context, document)
        # What the client sent: `operation_name` answers the first operation's name without.
        unnamed = unchosen(document, context._provided_operation_name)
        if cost.refusal is not None:
            context.pre_execution_errors = [limit_error(cost.refusal)]
        elif unnamed is not None:
            context.pre_execution_errors = [unnamed]
        else:
            errors = self.documents.validated(
                context.query or "",
                document,
                lambda: strawberry_schema.validate_document(
                    context.schema._schema, document, context.validation_rules
                ),
            )
            over = None if errors else replay_refusal(cost, self.replay_turns)
            context.pre_execution_errors = errors if over is None else [limit_error(over)]
        yield

    def _cost(self, context: ExecutionContext, document: DocumentNode) -> Cost:
        """The request's Cost: the one the edge priced, else priced now (and kept for the
        budgets of the request's context, when it has them)."""
        budget = getattr(context.context, "budget", None)
        if budget is not None and budget.cost is not None:
            cost: Cost = budget.cost
            return cost
        text = context.query or ""
        cost = price(
            context.schema._schema,
            document,
            self.documents.bounded(text, document),
            context._provided_operation_name,
            context.variables,
            MAX_SIMILAR_PER_REQUEST if budget is None else budget.limit,
        )
        if budget is not None:
            budget.cost = cost
        return cost


def replay_refusal(cost: Cost, limit: int) -> Refusal | None:
    """The refusal of a request that could read more replay turns than `limit`."""
    if cost.replay_turns <= limit:
        return None
    return Refusal(
        f"replay turns: this query may read up to {cost.replay_turns} (each replay field's "
        f"`first` times the sessions it can run for); at most {limit} per request "
        "(SIMILAR_SESSIONS_REPLAY_TURNS): ask smaller pages or fewer sessions",
        "replay_turns",
        limit,
    )


def unchosen(document: DocumentNode, operation_name: str | None) -> GraphQLError | None:
    """The error of a document of several operations sent without `operationName` (the
    GraphQL spec's GetOperation: strawberry ran the first), else None."""
    if operation_name is not None:
        return None
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(operations) < 2:
        return None
    names = ", ".join(o.name.value if o.name else "(unnamed)" for o in operations)
    return GraphQLError(
        f"operationName: the query holds {len(operations)} operations ({names}); name the one "
        "to run in `operationName`",
        extensions={"code": "BAD_USER_INPUT", "argument": "operationName"},
    )
