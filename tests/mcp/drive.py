"""Drives `consentd mcp` with the official MCP Python SDK's stdio client.

Usage: drive.py SCRIPT, where SCRIPT is JSON: {"server": [argv...], "steps": [...]}. Each step
prints one JSON line on stdout when it is done, flushed, so the test reading them can act (press
the owner's buttons) between steps:

- {"list_tools": {"tool": [arguments, ...]}}: lists the tools and checks each documented call
  against its tool's input schema; prints the negotiated revision, the tool names and every call
  that does not validate.
- {"call": NAME, "arguments": {...}, "progress": true}: calls a tool (with a progress token when
  asked) and prints isError, structuredContent, the text and the progress values seen.
- {"call": ..., "cancel_after_progress": true}: calls with a progress token and cancels the call
  at its first progress notification (the SDK then sends notifications/cancelled).
"""

import json
import sys

import anyio
import jsonschema
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def emit(line):
    print(json.dumps(line), flush=True)


async def list_tools(client, calls):
    tools = (await client.list_tools()).tools
    schemas = {tool.name: tool.input_schema for tool in tools}
    invalid = []
    for name, argument_sets in calls.items():
        for arguments in argument_sets:
            try:
                jsonschema.validate(arguments, schemas[name])
            except (jsonschema.ValidationError, KeyError) as error:
                invalid.append({"tool": name, "arguments": arguments, "error": str(error)[:200]})
    emit({"step": "list_tools", "protocol": client.protocol_version,
          "tools": [tool.name for tool in tools], "invalid": invalid})


async def call(client, step):
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message})

    callback = on_progress if step.get("progress") else None
    result = await client.call_tool(step["call"], step.get("arguments", {}),
                                    progress_callback=callback)
    emit({"step": "call", "isError": bool(result.is_error),
          "structured": result.structured_content,
          "text": "".join(block.text for block in result.content if block.type == "text"),
          "progress": progress})


async def call_and_cancel(client, step):
    seen = anyio.Event()

    async def on_progress(value, total, message):
        seen.set()

    async with anyio.create_task_group() as group:
        async def run():
            await client.call_tool(step["call"], step.get("arguments", {}),
                                   progress_callback=on_progress)
            emit({"step": "call", "error": "the call ended before it was cancelled"})

        group.start_soon(run)
        await seen.wait()
        group.cancel_scope.cancel()
    emit({"step": "cancelled"})


async def main(script):
    argv = script["server"]
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server) as client:
        for step in script["steps"]:
            if "list_tools" in step:
                await list_tools(client, step["list_tools"])
            elif step.get("cancel_after_progress"):
                await call_and_cancel(client, step)
            else:
                await call(client, step)


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
