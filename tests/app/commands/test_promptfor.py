"""`prompt AGENT --for FILE|-` (SPEC section 13): the snippet whose examples and notes fit the
task at hand, ranked by BM25 between the task and each lesson (its own text and its item's),
the most relevant last; ties and lessons with no word in common fall back to recency.

The agent here has learned about three topics, recipes first and football last: the plain
snippet (the last two examples) is about football whatever the task.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from feedbackd import load_feedback_for_prompt
from feedbackd.core.curation.relevance import Index, most_relevant, words
from feedbackd.core.errors import InvalidItem
from tests.web_kit import Server
from tests.workspace_kit import Site, draft

AGENT = "w"
# (item, draft content, what the curator changed; or the rejection note), oldest first.
LESSONS: list[tuple[str, dict[str, str], dict[str, str] | str]] = [
    (
        "qi-bread",
        {"title": "Sourdough loaf", "body": "Flour, water, salt and a starter; a long cold proof."},
        {"title": "Overnight sourdough loaf"},
    ),
    (
        "qi-soup",
        {"title": "Tomato soup", "body": "A recipe for a quick soup of roasted tomatoes."},
        {"title": "Roasted tomato soup"},
    ),
    (
        "qi-oven",
        {"title": "Bake a loaf of bread", "body": "Heat the oven and bake the bread."},
        "Give oven temperatures in Celsius and Fahrenheit",
    ),
    (
        "qi-index",
        {"title": "Postgres indexes", "body": "A btree index saves the query planner a scan."},
        {"title": "Five Postgres indexes that pay off"},
    ),
    (
        "qi-join",
        {"title": "Joins explained", "body": "Inner and outer joins of two tables in one query."},
        {"title": "SQL joins, drawn as Venn diagrams"},
    ),
    (
        "qi-drop",
        {"title": "Clean up old tables", "body": "DROP TABLE removes a table for good."},
        "Never show DROP TABLE without taking a backup first",
    ),
    (
        "qi-derby",
        {
            "title": "The derby",
            "body": "Ninety minutes of a football derby: two goals, a red card.",
        },
        {"title": "A derby to remember"},
    ),
    (
        "qi-transfer",
        {"title": "Transfer news", "body": "The striker signs for a club in the football league."},
        {"title": "The striker's transfer"},
    ),
    (
        "qi-var",
        {"title": "Match report", "body": "The referee checks the goal on the screen."},
        "Say which league the match was played in",
    ),
]
SETTINGS = "prompt:\n  max_examples: 2\n  include_rejections: true\n  max_rejections: 1\n"
RECIPE_TASK = "A recipe for sourdough bread: flour, water, salt and a long cold proof."
DATABASE_TASK = "Make this slow Postgres query on a big table faster with a btree index."
FOOTBALL_TASK = "Report on the football derby: the goals, the red card, who won the match."


def snippet(examples: list[tuple[str, str]], note: str) -> str:
    """Section 5's text for these (original, corrected) examples and one rejection note."""
    blocks = [
        f"Example {n}:\nOriginal: {original}\nCorrected: {corrected}\n"
        for n, (original, corrected) in enumerate(examples, start=1)
    ]
    return (
        "## Learn from past corrections\n"
        + "\n".join(blocks)
        + "\n## Things to avoid (from past curator rejections)\n"
        + f"1. {note}\n"
        + "Read these carefully — outputs that ignore them will be rejected again.\n"
    )


BREAD = ("Sourdough loaf", "Overnight sourdough loaf")
SOUP = ("Tomato soup", "Roasted tomato soup")
INDEX = ("Postgres indexes", "Five Postgres indexes that pay off")
JOIN = ("Joins explained", "SQL joins, drawn as Venn diagrams")
DERBY = ("The derby", "A derby to remember")
TRANSFER = ("Transfer news", "The striker's transfer")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The agent's lessons, decided one by one through the real pipeline (the tests only read)."""
    site = Site(tmp_path_factory.mktemp("promptfor") / "ws")
    site.configure(SETTINGS)
    site.git("commit", "-q", "-m", "two examples and a note", "feedbackd.yaml")
    for item, content, outcome in LESSONS:
        if isinstance(outcome, str):
            doc = draft(content, rejectionFeedback=outcome)
            site.write(AGENT, f"{item}.json", doc, folder="rejected")
        else:
            doc = draft({**content, **outcome}, content)
            site.write(AGENT, f"{item}.json", doc, folder="approved")
        site.reconcile()
    return site


def prompt_for(site: Site, task: str, *extra: str) -> str:
    done = site.cli("prompt", AGENT, "--for", "-", *extra, stdin=task)
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- three topics -------------------------------------------------------------------------------
def test_recency_alone_shows_football_whatever_the_task(site: Site) -> None:
    plain = site.cli("prompt", AGENT).stdout
    assert plain == site.prompt(AGENT)
    assert plain == snippet([DERBY, TRANSFER], "Say which league the match was played in")


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        # The bread is older than the soup, and more relevant: it comes last.
        (RECIPE_TASK, snippet([SOUP, BREAD], "Give oven temperatures in Celsius and Fahrenheit")),
        (
            DATABASE_TASK,
            snippet([JOIN, INDEX], "Never show DROP TABLE without taking a backup first"),
        ),
        # The derby is older than the transfer, and more relevant: it comes last.
        (FOOTBALL_TASK, snippet([TRANSFER, DERBY], "Say which league the match was played in")),
    ],
    ids=["recipes", "databases", "football"],
)
def test_for_picks_the_lessons_of_the_task_most_relevant_last(
    site: Site, task: str, expected: str
) -> None:
    before = site.prompt(AGENT)
    assert prompt_for(site, task) == expected
    # --for writes nothing: the snippet on disk stays section 5's, the work tree clean.
    assert site.prompt(AGENT) == before
    assert site.git("status", "--porcelain") == ""


def test_a_lesson_is_found_by_the_text_of_its_item(site: Site) -> None:
    """The soup's correction says nothing of recipes or tomatoes (only "tomato"); its item
    does. Nothing else matches: the newest example and note follow by recency."""
    assert prompt_for(site, "Any recipe with tomatoes?") == snippet(
        [TRANSFER, SOUP], "Say which league the match was played in"
    )


def test_a_task_that_shares_no_word_gets_the_plain_snippet(site: Site) -> None:
    """No overlap (stop words do not count): recency, as the plain snippet has it."""
    assert prompt_for(site, "Quantum chromodynamics, of the and a") == site.prompt(AGENT)
    assert prompt_for(site, "") == site.prompt(AGENT)


# --- the forms of the task ------------------------------------------------------------------------
def test_a_draft_file_in_each_item_format_is_read_by_its_content_fields(
    site: Site, tmp_path: Path
) -> None:
    expected = prompt_for(site, RECIPE_TASK)
    files = {
        "qi-new.json": json.dumps({"contentData": {"title": "Bread", "body": RECIPE_TASK}}),
        "qi-new.yaml": f"contentData:\n  title: Bread\n  body: '{RECIPE_TASK}'\n",
        "qi-new.md": f"---\ntitle: Bread\nslug: bread\n---\n{RECIPE_TASK}\n",
        "task.md": f"# Today\n\n{RECIPE_TASK}\n",  # Markdown without front matter: plain text
        "task.txt": RECIPE_TASK,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        done = site.cli("prompt", AGENT, "--for", str(tmp_path / name))
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, ""), name


def test_a_json_draft_on_standard_input_keeps_its_own_id(site: Site) -> None:
    draft_doc = {"id": "qi-99", "contentData": {"title": "Derby day", "body": FOOTBALL_TASK}}
    assert prompt_for(site, json.dumps(draft_doc)) == prompt_for(site, FOOTBALL_TASK)


def test_the_relevant_examples_from_python(site: Site) -> None:
    assert load_feedback_for_prompt(
        AGENT, limit=3, workspace=site.root, for_text=DATABASE_TASK
    ) == [
        {"original": TRANSFER[0], "corrected": TRANSFER[1], "field": "title"},  # the newest
        {"original": JOIN[0], "corrected": JOIN[1], "field": "title"},
        {"original": INDEX[0], "corrected": INDEX[1], "field": "title"},
    ]
    # Without for_text, the last examples as before.
    assert [e["original"] for e in load_feedback_for_prompt(AGENT, 2, site.root)] == [
        DERBY[0],
        TRANSFER[0],
    ]
    with pytest.raises(InvalidItem, match="for_text is over 1 MiB"):
        load_feedback_for_prompt(AGENT, workspace=site.root, for_text="x" * (1024 * 1024 + 1))
    with pytest.raises(TypeError, match="for_text must be a string"):
        load_feedback_for_prompt(AGENT, workspace=site.root, for_text=b"bread")  # type: ignore[arg-type]


def test_a_process_that_asks_again_sees_new_lessons_and_replaced_items(tmp_path: Path) -> None:
    """The index kept between calls is built again when feedback.json changes or an item
    folder does (an item file added, removed or replaced, as an editor's save replaces it)."""
    site = Site(tmp_path / "ws")
    for item, content, change in [LESSONS[0], LESSONS[1]]:
        assert isinstance(change, dict)
        site.write("k", f"{item}.json", draft({**content, **change}, content), folder="approved")
        site.reconcile()

    def last_example(task: str) -> str:
        chosen = load_feedback_for_prompt("k", limit=1, workspace=site.root, for_text=task)
        return str(chosen[-1]["original"])

    assert last_example("carbonara with guanciale") == "Tomato soup"  # no overlap: the newest
    assert last_example("sourdough") == "Sourdough loaf"
    carbonara = {"title": "Carbonara", "body": "Spaghetti, eggs, pecorino and guanciale."}
    site.write("k", "qi-pasta.json", draft({"title": "Roman carbonara"}, carbonara), "approved")
    site.reconcile()
    assert last_example("carbonara with guanciale") == "Carbonara"
    # The bread's item, replaced by a version that speaks of polenta: feedback.json unchanged.
    bread = site.agent("k") / "approved" / "qi-bread.json"
    doc = json.loads(bread.read_text())
    doc["contentData"]["body"] = "Or a polenta loaf."
    (bread.parent / "qi-bread.json.new").write_text(json.dumps(doc))
    (bread.parent / "qi-bread.json.new").replace(bread)
    assert last_example("polenta") == "Sourdough loaf"


# --- bad input ----------------------------------------------------------------------------------
BAD_FILES: dict[str, tuple[bytes, str]] = {
    "draft.json": (b'{"contentData": {"title": "Bread",}}', "draft.json: "),
    "qi-1.yaml": (b"contentData: &a {title: x}\nother: *a\n", "qi-1.yaml: "),
    "qi-2.md": (b"---\ntitle: no closing line\n", "qi-2.md: the front matter opened on line 1"),
    "qi-3.json": (b'{"title": "no contentData"}', "qi-3.json: contentData is missing"),
    "latin1.txt": ("Bröd".encode("latin-1"), "latin1.txt: the file is not UTF-8"),
    "huge.txt": (b"bread " * 200_000, "huge.txt is over 1 MiB"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_a_file_that_cannot_be_read_or_parsed_is_an_invalid_item_naming_it(
    site: Site, tmp_path: Path, name: str
) -> None:
    data, said = BAD_FILES[name]
    (tmp_path / name).write_bytes(data)
    done = site.cli("prompt", AGENT, "--for", str(tmp_path / name))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"error: invalid_item: {tmp_path / name}"), done.stderr
    assert said in done.stderr


def test_a_missing_file_or_a_folder_is_an_invalid_item_naming_it(
    site: Site, tmp_path: Path
) -> None:
    for target in (tmp_path / "nowhere.txt", tmp_path):
        done = site.cli("prompt", AGENT, "--for", str(target))
        assert done.returncode == 1
        assert done.stderr.startswith(f"error: invalid_item: {target}: the file cannot be read")
        assert "- to read the task from standard input" in done.stderr


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        ("{not json", "standard input: "),
        ('{"text": 5}', "standard input: text must be a string, not a number"),
        ('{"txt": "bread"}', "standard input: unknown field `txt` (did you mean `text`?)"),
        ('{"contentData": "bread"}', "standard input: contentData must be an object"),
        ("bread " * 200_000, "standard input is over 1 MiB"),
    ],
    ids=["not-json", "text-not-string", "unknown-key", "bad-item", "huge"],
)
def test_bad_standard_input_is_an_invalid_item(site: Site, stdin: str, said: str) -> None:
    done = site.cli("prompt", AGENT, "--for", "-", stdin=stdin)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"error: invalid_item: {said}"), done.stderr


def test_for_with_at_or_for_an_unknown_agent_is_refused(site: Site) -> None:
    both = site.cli("prompt", AGENT, "--for", "-", "--at", "HEAD", stdin="bread")
    assert both.returncode == 2
    assert both.stderr.startswith("error: usage: --for and --at do not go together")
    unknown = site.cli("prompt", "x", "--for", "-", stdin="bread")
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: not_found: no agent x in _data/agents/")


# --- over HTTP ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[Server]:
    running = Server(site.root)
    yield running
    running.close()


@pytest.mark.slow
def test_post_prompt_answers_the_same_snippet_as_markdown(site: Site, server: Server) -> None:
    expected = prompt_for(site, RECIPE_TASK)
    item = {"id": "qi-77", "contentData": {"title": "Bread", "body": RECIPE_TASK}}
    for body in ({"text": RECIPE_TASK}, item):
        answer = server.post(f"/api/agents/{AGENT}/prompt", body)
        assert answer.status == 200
        assert answer.headers["content-type"] == "text/markdown; charset=utf-8"
        assert answer.text == expected
    plain = server.get(f"/api/agents/{AGENT}/prompt")
    assert plain.status == 200 and plain.text == site.prompt(AGENT)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "status", "error", "said"),
    [
        ({"text": 5}, 400, "invalid_item", "the body: text must be a string, not a number"),
        ({}, 400, "invalid_item", "the body: there is no text"),
        ({"contentData": []}, 400, "invalid_item", "the body: contentData must be an object"),
        (b"bread", 400, "invalid_feedback", "invalid JSON: expecting value"),
        (b'{"text": "' + b"b" * (1024 * 1024) + b'"}', 413, "too_large", "over 1 MiB"),
    ],
    ids=["text-not-string", "empty", "bad-item", "not-json", "huge"],
)
def test_post_prompt_refuses_bad_bodies(
    server: Server, body: Any, status: int, error: str, said: str
) -> None:
    path = f"/api/agents/{AGENT}/prompt"
    raw = body if isinstance(body, bytes) else None
    answer = server.post(path, None if raw else body, raw=raw)
    assert (answer.status, answer.json()["error"]) == (status, error)
    assert said in answer.json()["message"]


@pytest.mark.slow
def test_post_prompt_for_an_unknown_agent_is_404(server: Server) -> None:
    answer = server.post("/api/agents/nobody/prompt", {"text": "bread"})
    assert (answer.status, answer.json()["error"]) == (404, "not_found")


# --- the ranking itself ---------------------------------------------------------------------------
def test_words_are_case_folded_runs_of_letters_and_digits_without_stop_words() -> None:
    assert words("The Crème-brûlée of 2026, and a ½ cup!") == [
        "crème",
        "brûlée",
        "2026",
        "½",
        "cup",
    ]
    assert words("東京の天気") == ["東", "京", "の", "天", "気"]


def test_ties_and_no_overlap_go_to_the_newer_and_the_most_relevant_comes_last() -> None:
    scores = np.array([0.0, 2.0, 0.0, 2.0, 5.0, 0.0])
    assert most_relevant(scores, range(6), 3) == [1, 3, 4]  # 3 beats 1: newer, same score
    assert most_relevant(scores, range(6), 5) == [2, 5, 1, 3, 4]
    assert most_relevant(scores, [0, 2, 4], 9) == [0, 2, 4]
    assert most_relevant(np.zeros(4), [0, 1, 2, 3], 2) == [2, 3]  # recency, oldest first
    assert most_relevant(scores, range(6), 0) == most_relevant(scores, [], 3) == []


def test_equal_lessons_score_equal_and_unknown_words_score_nothing() -> None:
    index = Index(["sourdough bread", "tomato soup", "sourdough bread", "!!!"])
    scores = index.scores("bread, please").tolist()
    assert scores[0] == scores[2] > 0 and scores[1] == scores[3] == 0
    assert index.scores("quantum").tolist() == [0.0] * 4
    assert index.scores("").tolist() == [0.0] * 4
    assert Index([]).scores("bread").tolist() == []
    assert Index(["", "!!!"]).scores("bread").tolist() == [0.0, 0.0]


def test_only_the_ranking_path_loads_numpy() -> None:
    """The daemon, the command line and the web server start without numpy (or bm25s)."""
    code = (
        "import sys, feedbackd, feedbackd.cli.main, feedbackd.web.server, "
        "feedbackd.app.daemon.service\n"
        "print(sorted(m for m in ('numpy', 'bm25s') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
