"""The MCP server's tools, resources and prompt (SPEC section 16), through the SDK's own client
connected in process: each tool answers what its command prints with --json, and refuses what
the command refuses, with its code and message, while the server goes on serving."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from feedbackd.cli import demo
from tests.cli_kit import run_cli
from tests.conftest import known_environment
from tests.mcp_kit import answer, cli_json, in_process, refusal, run

TASK = "A blog post on typing an API client with TypeScript generics, for the engineering blog."
TOOLS = {"lessons_for", "snippet", "recent_feedback", "list_ratings", "reputation", "why", "stats"}
WRITE_TOOLS = {"submit_rating", "record_feedback"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo workspace as `make run` builds it, once for the module's tests to read."""
    root = tmp_path_factory.mktemp("demo") / "demo"
    with known_environment(tmp_path_factory.mktemp("home")):
        demo.build(root)
    return root


def approximately(value: Any) -> Any:
    """`value` with each float compared to 1e-3: a reputation decays by the second between the
    command's reading and the tool's."""
    if isinstance(value, float):
        return pytest.approx(value, abs=1e-3)
    if isinstance(value, dict):
        return {key: approximately(item) for key, item in value.items()}
    if isinstance(value, list):
        return [approximately(item) for item in value]
    return value


def call(root: Path, tool: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with in_process(root) as client:
            return await client.call_tool(tool, arguments)

    return run(main)


SAME_AS_COMMANDS = [
    (
        "lessons_for",
        {"agent": "content-writer", "task": TASK},
        ["prompt", "content-writer", "--for", "-"],
    ),
    ("snippet", {"agent": "seo-helper"}, ["prompt", "seo-helper"]),
    (
        "snippet",
        {"agent": "content-writer", "at": "HEAD~5"},
        ["prompt", "content-writer", "--at", "HEAD~5"],
    ),
    (
        "recent_feedback",
        {"agent": "content-writer", "limit": 3},
        ["recent", "content-writer", "--limit", "3"],
    ),
    ("recent_feedback", {"agent": "seo-helper"}, ["recent", "seo-helper"]),
    (
        "list_ratings",
        {"skill_id": "claude-code-run"},
        ["feedback", "list", "--skill", "claude-code-run"],
    ),
    (
        "list_ratings",
        {"skill_id": "claude-code-run", "agent": "heavylift-chengwen", "since": "52w", "limit": 2},
        [
            "feedback",
            "list",
            "--skill",
            "claude-code-run",
            "--agent",
            "heavylift-chengwen",
            "--since",
            "52w",
            "--limit",
            "2",
        ],
    ),
    ("reputation", {"agent": "heavylift-chengwen"}, ["reputation", "heavylift-chengwen"]),
    (
        "reputation",
        {"agent": "heavylift-chengwen", "skill": "claude-code-run"},
        ["reputation", "heavylift-chengwen", "--skill", "claude-code-run"],
    ),
    ("reputation", {"agent": "heavylift-chengwn"}, ["reputation", "heavylift-chengwn"]),
    ("why", {"agent": "content-writer"}, ["why", "content-writer"]),
    ("stats", {"agent": "content-writer"}, ["stats", "content-writer"]),
    (
        "stats",
        {"agent": "seo-helper", "by": "month", "since": "8w"},
        ["stats", "seo-helper", "--by", "month", "--since", "8w"],
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "argv"), SAME_AS_COMMANDS)
def test_each_tool_answers_what_its_command_prints(
    built: Path, tool: str, arguments: dict[str, Any], argv: list[str]
) -> None:
    result = call(built, tool, arguments)
    printed = cli_json(built, *argv, "--json", stdin=TASK)
    assert answer(result) == approximately(printed)
    text = result.content[0].text  # type: ignore[union-attr]
    if tool in ("lessons_for", "snippet"):  # the snippet as the agent reads it
        assert text == printed["text"] and text.startswith("## Learn from past corrections")
    else:
        assert json.loads(text) == approximately(printed)


def test_the_tools_say_what_they_take_and_answer_with_json_schemas(built: Path) -> None:
    async def main() -> Any:
        async with in_process(built) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in run(main)}
    assert set(tools) == TOOLS | WRITE_TOOLS
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and "\n" not in tool.description
    assert tools["lessons_for"].input_schema["required"] == ["agent", "task"]
    assert set(tools["lessons_for"].output_schema["properties"]) == {"agent", "text", "examples"}
    assert tools["lessons_for"].annotations.read_only_hint  # type: ignore[union-attr]
    assert not tools["record_feedback"].annotations.read_only_hint  # type: ignore[union-attr]


def test_lessons_for_takes_a_limit_of_examples(built: Path) -> None:
    chosen = answer(
        call(built, "lessons_for", {"agent": "content-writer", "task": TASK, "limit": 2})
    )
    assert len(chosen["examples"]) == 2
    assert chosen["text"].count("\nOriginal: ") == 2
    best = answer(call(built, "lessons_for", {"agent": "content-writer", "task": TASK}))
    assert chosen["examples"] == best["examples"][-2:]  # the most relevant, the best last


def command_error(root: Path, *argv: str) -> str:
    """What the command says on stderr, without `error: `."""
    done = run_cli(["-w", str(root), *argv], stdin=TASK)
    assert done.returncode in (1, 2), done.stdout
    return done.stderr.strip().removeprefix("error: ")


def test_an_unknown_agent_is_not_found_naming_the_closest_as_the_command_says(built: Path) -> None:
    result = call(built, "lessons_for", {"agent": "content-writr", "task": TASK})
    code, message = refusal(result)
    assert code == "not_found" and "did you mean content-writer?" in message
    assert f"{code}: {message}" == command_error(built, "prompt", "content-writr", "--for", "-")
    for tool in ("snippet", "recent_feedback", "why", "stats"):
        assert refusal(call(built, tool, {"agent": "content-writr"}))[0] == "not_found"


def test_bad_arguments_are_tool_errors_with_the_commands_codes(built: Path) -> None:
    said = refusal(call(built, "stats", {"agent": "content-writer", "by": "year"}))
    assert f"{said[0]}: {said[1]}" == command_error(
        built, "stats", "content-writer", "--by", "year"
    )
    said = refusal(call(built, "snippet", {"agent": "../etc"}))
    assert f"{said[0]}: {said[1]}" == command_error(built, "prompt", "../etc")
    said = refusal(call(built, "list_ratings", {"skill_id": "claude-code-run", "since": "soon"}))
    assert said[0] == "usage"
    code, message = refusal(call(built, "recent_feedback", {"agent": "seo-helper", "limit": 0}))
    assert code == "usage" and "greater than or equal to 1" in message
    code, message = refusal(call(built, "recent_feedback", {"agent": "seo-helper", "limit": "x"}))
    assert (code, message) == ("usage", "recent_feedback: limit: Input should be a valid integer,"
                                        " unable to parse string as an integer")  # fmt: skip
    code, message = refusal(call(built, "lessons_for", {"agent": "seo-helper"}))
    assert (code, message) == ("usage", "lessons_for: task: Field required")


def test_the_server_goes_on_serving_after_refusals(built: Path) -> None:
    async def main() -> list[Any]:
        async with in_process(built) as client:
            return [
                await client.call_tool("why", {"agent": "nobody"}),
                await client.call_tool("why", {"agent": 7}),
                await client.call_tool("stats", {"agent": "seo-helper", "by": "year"}),
                await client.call_tool("why", {"agent": "seo-helper"}),
            ]

    *refused, fine = run(main)
    assert [result.is_error for result in refused] == [True, True, True]
    assert answer(fine)["agent"] == "seo-helper"


def test_a_task_of_a_megabyte_is_answered_and_a_larger_one_refused(built: Path) -> None:
    words = "generics typed client request response route "
    huge = (words * (1_000_000 // len(words) + 1))[:1_000_000]
    too_big = huge + "x" * (1 << 20)

    async def main() -> list[Any]:
        async with in_process(built) as client:
            return [
                await client.call_tool("lessons_for", {"agent": "content-writer", "task": huge}),
                await client.call_tool("lessons_for", {"agent": "content-writer", "task": too_big}),
                await client.call_tool("why", {"agent": "content-writer"}),
            ]

    fitted, refused, after = run(main)
    assert answer(fitted)["examples"]
    code, message = refusal(refused)
    assert code == "invalid_item" and "MiB" in message and len(message) < 400
    assert answer(after)["lines"]


def test_the_resources_are_the_snippet_and_the_stats(built: Path) -> None:
    async def main() -> list[Any]:
        async with in_process(built) as client:
            templates = (await client.list_resource_templates()).resource_templates
            snippet = await client.read_resource("feedbackd://agents/seo-helper/snippet")
            stats = await client.read_resource("feedbackd://agents/seo-helper/stats")
            return [templates, snippet.contents[0], stats.contents[0]]

    templates, snippet, stats = run(main)
    assert {(t.uri_template, t.mime_type) for t in templates} == {
        ("feedbackd://agents/{agent}/snippet", "text/markdown"),
        ("feedbackd://agents/{agent}/stats", "application/json"),
    }
    printed = run_cli(["-w", str(built), "prompt", "seo-helper"])
    assert (snippet.mime_type, snippet.text) == ("text/markdown", printed.stdout)
    assert json.loads(stats.text) == cli_json(built, "stats", "seo-helper", "--json")


def test_a_resource_of_an_unknown_agent_is_an_error_naming_the_closest(built: Path) -> None:
    async def main() -> MCPError:
        async with in_process(built) as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource("feedbackd://agents/seo-helpr/snippet")
            assert answer(await client.call_tool("why", {"agent": "seo-helper"}))  # still serving
            return refused.value

    assert run(main).message.startswith("not_found: no agent seo-helpr in _data/agents/: did you")


def test_the_prompt_holds_the_lessons_for_the_task(built: Path) -> None:
    async def main() -> list[Any]:
        async with in_process(built) as client:
            prompts = (await client.list_prompts()).prompts
            given = await client.get_prompt(
                "learn-from-feedback", {"agent": "content-writer", "task": TASK}
            )
            return [prompts, given]

    prompts, given = run(main)
    assert [(p.name, sorted(a.name for a in p.arguments or [])) for p in prompts] == [
        ("learn-from-feedback", ["agent", "task"])
    ]
    (message,) = given.messages
    lessons = answer(call(built, "lessons_for", {"agent": "content-writer", "task": TASK}))
    assert (message.role, message.content.text) == ("user", lessons["text"])


def test_without_writes_the_write_tools_are_not_offered(built: Path) -> None:
    async def main() -> list[Any]:
        async with in_process(built, allow_writes=False) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            refused = await client.call_tool("record_feedback", {"agent": "seo-helper"})
            return [names, refused]

    names, refused = run(main)
    assert names == TOOLS
    assert refused.is_error and "record_feedback" in refused.content[0].text


def test_the_docs_show_the_host_configuration_and_a_call_of_each_tool(built: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    first = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    expected = {"command": "feedbackd", "args": ["-w", "/path/to/workspace", "mcp"]}
    assert first["mcpServers"]["feedbackd"] == expected

    async def main() -> Any:
        async with in_process(built) as client:
            return (await client.list_tools()).tools

    schemas = {tool.name: tool.input_schema for tool in run(main)}
    sections = dict(re.findall(r"\n### (\w+)[^\n]*\n(.*?)(?=\n## |\n### |\Z)", text, re.S))
    assert set(sections) == set(schemas)
    for name, section in sections.items():
        asked = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
        assert set(asked) <= set(schemas[name]["properties"]), name
        assert set(schemas[name].get("required", [])) <= set(asked), name
