"""A tiny agent loop instrumented with the OpenTelemetry SDK, sending GenAI spans to
similar-sessions as it runs (docs/ingest.md).

    make run    # in another terminal: the API and console on the demo, indexing as it serves
    export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:8000
    export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer sk-demo-ingest-tau-bench-airline"
    .venv/bin/python examples/otel_agent.py

The "model" is scripted (no provider, no key): an airline support agent that looks a
reservation up and cancels it, as the demo's tau-bench sessions do. Each model call is a
`chat` span carrying the conversation so far (`gen_ai.input.messages`) and its reply
(`gen_ai.output.messages`); each tool call an `execute_tool` span; all inside one
`invoke_agent` span, every one naming the conversation (`gen_ai.conversation.id`). The spans
go out as a real agent's do: a BatchSpanProcessor and the OTLP/HTTP protobuf exporter, gzipped.
The session shows in the console as it runs (`--pause` slows the loop down to watch it)."""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode, Tracer

# (what the user says, the tool the agent calls with its arguments, what the tool answers,
# what the agent says after)
SCRIPT = [
    (
        "Hi, I need to cancel my reservation ZFA04Y, my plans changed.",
        ("get_reservation_details", {"reservation_id": "ZFA04Y"}),
        '{"reservation_id": "ZFA04Y", "origin": "SFO", "destination": "JFK", '
        '"cabin": "economy", "insurance": "no", "created_at": "2024-05-14T09:12:00"}',
        "I found reservation ZFA04Y, SFO to JFK in economy, booked without insurance. "
        "May I ask why you want to cancel?",
    ),
    (
        "Change of plan. Please cancel it and refund me.",
        ("cancel_reservation", {"reservation_id": "ZFA04Y"}),
        '{"error": "cancellation is not allowed: booked more than 24 hours ago, economy, '
        'no travel insurance"}',
        "I'm sorry: an economy booking without insurance can only be cancelled within 24 "
        "hours of booking, so I cannot cancel ZFA04Y or refund it.",
    ),
]


def tracer_of(service: str) -> tuple[TracerProvider, Tracer]:
    """The SDK set up as an agent sets it up: the endpoint and the key are read from
    OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(compression=Compression.Gzip)))
    return provider, provider.get_tracer("examples.otel_agent")


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def run(tracer: Tracer, conversation: str, pause_s: float, fail: bool) -> None:
    """One conversation: per user message, a model call that asks for a tool, the tool, and
    a model call that answers; with `fail`, the last tool call ends in error."""
    history: list[dict[str, Any]] = [
        {
            "role": "system",
            "parts": [
                {"type": "text", "content": "You are an airline support agent. Follow the policy."}
            ],
        }
    ]
    common = {"gen_ai.conversation.id": conversation, "gen_ai.provider.name": "scripted"}
    with tracer.start_as_current_span("invoke_agent airline-support") as agent:
        agent.set_attributes(
            {**common, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "airline"}
        )
        for step, (said, (tool, arguments), answer, reply) in enumerate(SCRIPT):
            history.append(text("user", said))
            call_id = f"call_{step}"
            calling = {
                "role": "assistant",
                "parts": [
                    {"type": "tool_call", "id": call_id, "name": tool, "arguments": arguments}
                ],
            }
            chat(tracer, common, history, calling)
            history.append(calling)
            with tracer.start_as_current_span(f"execute_tool {tool}") as span:
                span.set_attributes(
                    {
                        **common,
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": tool,
                        "gen_ai.tool.call.id": call_id,
                        "gen_ai.tool.call.arguments": json.dumps(arguments),
                        "gen_ai.tool.call.result": answer,
                    }
                )
                if fail and step == len(SCRIPT) - 1:
                    span.set_status(Status(StatusCode.ERROR, "the tool refused"))
            history.append(
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": call_id, "response": answer}],
                }
            )
            answered = text("assistant", reply)
            chat(tracer, common, history, answered)
            history.append(answered)
            time.sleep(pause_s)


def chat(
    tracer: Tracer, common: dict[str, Any], history: list[dict[str, Any]], output: dict[str, Any]
) -> None:
    """One model call: the conversation so far in, the reply out."""
    with tracer.start_as_current_span("chat scripted-model") as span:
        span.set_attributes(
            {
                **common,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "scripted-model",
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps([output]),
            }
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversation", default=None, help="gen_ai.conversation.id to use")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between user turns")
    parser.add_argument("--fail", action="store_true", help="end the last tool call in error")
    args = parser.parse_args()
    conversation = args.conversation or f"example-{uuid.uuid4().hex[:12]}"
    provider, tracer = tracer_of("example-airline-agent")
    run(tracer, conversation, args.pause, args.fail)
    provider.force_flush()
    provider.shutdown()
    print(f"sent conversation {conversation}: open the console's sessions to see it")


if __name__ == "__main__":
    main()
