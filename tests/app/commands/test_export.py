"""`feedbackd export`: decided items as fine-tuning and evaluation data, read from the history
as one commit held it (SPEC section 13). A curator's month is played through the real pipeline
and real git; each line is checked against the shapes OpenAI documents for fine-tuning files,
the `hf` folder is loaded with the real `datasets`, and the same commit always gives the same
bytes, without reverted decisions or forgotten lessons."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.commands.exportwrite import open_export, write_export
from feedbackd.core.config import Settings
from feedbackd.core.curation.exportrows import (
    DecisionCommits,
    export_text,
    json_text,
    ledger_lines,
    standing_decisions,
)
from feedbackd.core.curation.exportsplits import ExportOptions
from feedbackd.edges.git.repo import GitRepo, history_of
from tests.conftest import known_environment
from tests.web_kit import Server
from tests.webhouse_kit import WebhouseAdmin
from tests.workspace_kit import Site, draft

AGENT = "w"
FORMATS = ("openai-sft", "openai-dpo", "trl-sft", "trl-dpo", "trl-kto", "dspy", "hf")


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


@pytest.fixture(scope="module")
def a_month_made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """One workspace after a month of curation, made once for the module's tests to copy."""
    with known_environment(tmp_path_factory.mktemp("home")):
        site = Site(tmp_path_factory.mktemp("a-month") / "ws")
        a_month(site)
        yield site


@pytest.fixture
def curated(a_month_made: Site, tmp_path: Path) -> Site:
    """A copy of the workspace after a month of curation, the test's own to change."""
    return a_month_made.copy_to(tmp_path / "ws")


def decide(site: Site, name: str, doc: Any, to: str) -> None:
    """A curator's edit of a queued draft, then its move; one pass records the decision."""
    site.write(AGENT, name, doc)
    site.move(AGENT, name, to)
    site.reconcile()


def a_month(site: Site) -> None:
    """Five drafts of a content writer, then the curator's month: a retitled post, one approved
    as it was, one rejected, a Markdown post with its body rewritten, a YAML page with two
    fields corrected."""
    post = {"title": "Why Generics Matter", "excerpt": "Generics."}
    site.write(AGENT, "d1.json", draft(post, collection="posts", slug="generics"))
    site.write(AGENT, "d2.json", draft({"title": "Rust ownership"}, task="Explain ownership"))
    site.write(AGENT, "d3.json", draft({"title": "Ten tips"}, collection="posts", slug="tips"))
    site.write(AGENT, "d4.md", "---\ntitle: Hello\nslug: hello\n---\nFirst body.\n")
    page = (
        "brief: Write the pricing page\ncontentData:\n  title: Prices\n  seo:\n    metaTitle: P\n"
    )
    site.write(AGENT, "d5.yaml", page)
    site.reconcile()  # the drafts' commit
    retitled = {**post, "title": "How Generics Save You"}
    decide(site, "d1.json", draft(retitled, collection="posts", slug="generics"), "approved")
    decide(
        site, "d2.json", draft({"title": "Rust ownership"}, task="Explain ownership"), "approved"
    )
    note = "Listicles are off-brand"
    rejected = draft({"title": "Ten tips"}, collection="posts", slug="tips", rejectionFeedback=note)
    decide(site, "d3.json", rejected, "rejected")
    decide(site, "d4.md", "---\ntitle: Hello\nslug: hello\n---\nA better body.\n", "approved")
    edited = page.replace("Prices", "Pricing that scales").replace("metaTitle: P", "metaTitle: Q")
    decide(site, "d5.yaml", edited, "approved")


def exported(site: Site, export_format: str, at: str | None = None, agent: str = AGENT) -> bytes:
    """What `feedbackd export` prints, from the same functions, in this process (dspy with
    its rejections)."""
    buffer = io.BytesIO()
    options = ExportOptions(include_rejections=True)
    write_export(open_export(site.runtime(), agent, export_format, at, options), None, buffer)
    return buffer.getvalue()


def lines(data: bytes) -> list[dict[str, Any]]:
    text = data.decode("utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.split("\n") if line]


def hf_rows(
    site: Site, tmp_path: Path, at: str | None = None, agent: str = AGENT
) -> list[dict[str, Any]]:
    out = tmp_path / "hf"
    write_export(open_export(site.runtime(), agent, "hf", at), out, io.BytesIO())
    return lines(hf_data(out).read_bytes())


def hf_data(out: Path) -> Path:
    """The `hf` folder's one data file, named by its content."""
    [data] = (out / "data").glob("train-*.jsonl")
    return data


# --- OpenAI's documented shapes (platform docs, "Supervised fine-tuning" and "Direct preference
# optimization": chat `messages`; `input`, `preferred_output`, `non_preferred_output`) ----------
def check_message(message: Any, role: str) -> str:
    assert isinstance(message, dict) and set(message) == {"role", "content"}, message
    assert message["role"] == role
    assert isinstance(message["content"], str) and message["content"].strip()
    return message["content"]


def check_sft_line(line: dict[str, Any]) -> tuple[str, str]:
    """A chat fine-tuning example: `messages`, the prompt then the assistant's answer."""
    assert set(line) == {"messages"}
    messages = line["messages"]
    assert isinstance(messages, list) and len(messages) == 2
    return check_message(messages[0], "user"), check_message(messages[1], "assistant")


def check_dpo_line(line: dict[str, Any]) -> tuple[str, str, str]:
    """A preference example: `input.messages` ending on the user's turn, and one assistant
    message each in `preferred_output` and `non_preferred_output`."""
    assert list(line) == ["input", "preferred_output", "non_preferred_output"]
    assert set(line["input"]) <= {"messages", "tools", "parallel_tool_calls"}
    messages = line["input"]["messages"]
    assert isinstance(messages, list) and messages
    prompt = check_message(messages[-1], "user")
    outputs = []
    for key in ("preferred_output", "non_preferred_output"):
        assert isinstance(line[key], list) and len(line[key]) == 1
        outputs.append(check_message(line[key][0], "assistant"))
    assert outputs[0] != outputs[1]
    return prompt, outputs[0], outputs[1]


def test_sft_has_a_chat_example_per_approved_item(curated: Site) -> None:
    found = [check_sft_line(line) for line in lines(exported(curated, "openai-sft"))]
    assert [prompt for prompt, _ in found] == [
        'Write the posts item "generics".',
        "Explain ownership",
        'Write the  item "hello".',  # collection missing: left empty, as documented
        "Write the pricing page",
    ]
    assert json.loads(found[0][1]) == {"excerpt": "Generics.", "title": "How Generics Save You"}
    assert found[0][1].index('"excerpt"') < found[0][1].index('"title"')  # keys sorted
    assert found[2][1] == "---\ntitle: Hello\n---\nA better body.\n"  # slug is not content
    assert json.loads(found[3][1]) == {"seo": {"metaTitle": "Q"}, "title": "Pricing that scales"}


def test_dpo_prefers_the_approved_version_to_the_draft_of_each_corrected_item(
    curated: Site,
) -> None:
    found = [check_dpo_line(line) for line in lines(exported(curated, "openai-dpo"))]
    assert len(found) == 3  # d2 was approved unedited and d3 rejected: no pair to learn from
    prompt, preferred, draft_text = found[0]
    assert prompt == 'Write the posts item "generics".'
    assert json.loads(preferred)["title"] == "How Generics Save You"
    assert json.loads(draft_text)["title"] == "Why Generics Matter"
    assert found[1][1:] == (
        "---\ntitle: Hello\n---\nA better body.\n",
        "---\ntitle: Hello\n---\nFirst body.\n",
    )
    assert json.loads(found[2][2]) == {"seo": {"metaTitle": "P"}, "title": "Prices"}


def test_dspy_rows_are_examples_whose_input_is_the_task(curated: Site) -> None:
    data = exported(curated, "dspy")
    assert data.startswith(b"[\n") and data.endswith(b"\n]\n")
    rows = json.loads(data)
    assert len(rows) == 5
    for row in rows:
        # dspy.Example(**row).with_inputs("input"): keyword names, "input" among them
        assert list(row) == ["input", "draft", "output", "feedback", "metadata"]
        assert all(key.isidentifier() for key in row) and isinstance(row["input"], str)
    assert rows[0]["feedback"] == "title: Why Generics Matter → How Generics Save You"
    assert rows[1]["feedback"] == "" and rows[1]["output"] == rows[1]["draft"]
    assert {key: rows[2][key] for key in ("input", "draft", "output", "feedback")} == {
        "input": 'Write the posts item "tips".',
        "draft": '{\n  "title": "Ten tips"\n}',
        "output": None,
        "feedback": "Listicles are off-brand",
    }
    assert rows[4]["feedback"].splitlines() == [
        "title: Prices → Pricing that scales",
        "seo.metaTitle: P → Q",
    ]


def test_the_hf_folder_loads_with_datasets(curated: Site, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    done = curated.cli("export", AGENT, "--format", "hf", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "exported 5 rows" in done.stderr
    card = (out / "README.md").read_text()
    head = curated.git("rev-parse", "HEAD").strip()
    path = hf_data(out).relative_to(out).as_posix()
    assert card.startswith("---\n") and f"    path: {path}\n" in card
    assert f"commit `{head}`" in card and "- decided items: 5\n" in card
    assert "- approved: 4 (3 corrected, 1 unedited)\n- rejected: 1\n" in card
    loaded = load_with_datasets(out, tmp_path)
    assert loaded["rows"] == 5 and loaded["columns"] == [
        "id", "agent", "decision", "input", "draft", "approved", "corrections",
        "notes", "curator", "decided_at", "commit",
        "prompt", "completion", "label", "chosen", "rejected",
    ]  # fmt: skip
    first = loaded["first"]
    assert first["id"] == "d1" and first["decision"] == "approved"
    assert first["corrections"] == [
        {"field": "title", "original": "Why Generics Matter", "corrected": "How Generics Save You"}
    ]
    assert first["curator"] == "Ada Curator <ada@example.org>"
    decisions = curated.git("log", "--format=%H", "--grep=^Feedback-Item: d1$").split()
    assert first["commit"] == decisions[0]


def load_with_datasets(folder: Path, tmp_path: Path) -> dict[str, Any]:
    """`datasets.load_dataset(folder)` as a user runs it, offline, with a cache of its own (in a
    process of its own: the library reads its settings when first imported)."""
    script = (
        "import json, sys, datasets\n"
        "train = datasets.load_dataset(sys.argv[1])['train']\n"
        "print(json.dumps({'rows': train.num_rows, 'columns': train.column_names,"
        " 'first': train[0] if train.num_rows else None,"
        " 'features': str(train.features['corrections'])}))\n"
    )
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf-home"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_a_changed_export_loads_fresh_from_the_same_cache(curated: Site, tmp_path: Path) -> None:
    """`datasets` keeps what it loaded under a key from the card: an export replaced in the same
    folder after a new decision must not load as the old rows from a user's cache."""
    out = tmp_path / "dataset"
    write_export(open_export(curated.runtime(), AGENT, "hf", None), out, io.BytesIO())
    assert load_with_datasets(out, tmp_path)["rows"] == 5
    curated.write(AGENT, "d6.json", draft({"title": "Later"}))
    curated.reconcile()
    decide(curated, "d6.json", draft({"title": "Later, better"}), "approved")
    write_export(open_export(curated.runtime(), AGENT, "hf", None), out, io.BytesIO())
    assert load_with_datasets(out, tmp_path)["rows"] == 6  # the same HF_HOME: its cache
    assert len(list((out / "data").iterdir())) == 1  # the earlier export's data is gone


def test_a_dataset_of_rejections_alone_still_types_its_corrections(
    site: Site, tmp_path: Path
) -> None:
    site.write(AGENT, "d1.json", draft({"title": "Dry"}))
    site.reconcile()
    decide(site, "d1.json", draft({"title": "Dry"}, rejectionFeedback="too dry"), "rejected")
    out = tmp_path / "dataset"
    write_export(open_export(site.runtime(), AGENT, "hf", None), out, io.BytesIO())
    loaded = load_with_datasets(out, tmp_path)
    assert loaded["rows"] == 1 and loaded["first"]["notes"] == "too dry"
    assert "corrected" in loaded["features"]  # from the card, though no row has one


# --- the same commit, the same bytes ------------------------------------------------------------
def test_the_same_commit_gives_the_same_bytes(curated: Site, tmp_path: Path) -> None:
    then = curated.git("rev-parse", "HEAD").strip()
    before = {name: exported(curated, name) for name in FORMATS if name != "hf"}
    first_hf = hf_rows(curated, tmp_path)
    curated.write(AGENT, "d6.json", draft({"title": "Later"}))
    curated.reconcile()
    decide(curated, "d6.json", draft({"title": "Later, better"}), "approved")
    for name, data in before.items():
        assert exported(curated, name, at=then) == data
        assert exported(curated, name) != data
    assert hf_rows(curated, tmp_path, at=then) == first_hf
    printed = curated.cli("export", AGENT, "--format", "openai-dpo", "--at", then)
    assert printed.returncode == 0 and printed.stdout.encode() == before["openai-dpo"]


def test_rows_follow_the_decisions_in_time_then_item_id() -> None:
    line = '{{"id": "dc-{n}", "item": "{item}", "state": "{state}", "at": "{at}"}}'
    ledger = "\n".join(
        [
            line.format(n=1, item="b", state="approved", at="2026-01-02T00:00:00.000Z"),
            line.format(n=2, item="a", state="approved", at="2026-01-02T00:00:00Z"),
            line.format(n=3, item="c", state="rejected", at="2026-01-01T09:00:00+00:00"),
            "not a line of the ledger",
            line.format(n=4, item="d", state="approved", at="2026-01-01T00:00:00.000Z"),
            line.format(n=5, item="d", state="queued", at="2026-01-03T00:00:00.000Z"),
            line.format(n=6, item="e", state="approved", at="2026-01-01T00:00:00.000Z"),
            line.format(n=7, item="e", state="rejected", at="2026-01-04T00:00:00.000Z"),
        ]
    )
    found = standing_decisions(ledger_lines(ledger))
    assert [(d.item, d.state) for d in found] == [
        ("c", "rejected"), ("a", "approved"), ("b", "approved"), ("e", "rejected"),
    ]  # fmt: skip
    assert found[0].at == "2026-01-01T09:00:00.000Z"


def test_decision_commits_follow_the_agent_back_through_a_rename() -> None:
    commits = DecisionCommits("new", ["a", "b"])
    walk = [
        ("5" * 40, {"Feedback-Event": "approve", "Feedback-Agent": "new", "Feedback-Item": "a"}),
        ("4" * 40, {"Feedback-Event": "approve", "Feedback-Agent": "other", "Feedback-Item": "b"}),
        ("3" * 40, {"Feedback-Event": "rename", "Feedback-Agent": "new",
                    "Feedback-Renamed-From": "old"}),
        ("2" * 40, {"Feedback-Event": "reject", "Feedback-Agent": "old", "Feedback-Item": "a"}),
        ("1" * 40, {"Feedback-Event": "approve", "Feedback-Agent": "old", "Feedback-Item": "b"}),
    ]  # fmt: skip
    for sha, trailers in walk:
        commits.add(sha, trailers)
    assert commits.names == ["new", "old"]
    first_a, first_b = commits.first("a"), commits.first("b")
    assert first_a is not None and (first_a.sha, first_a.agent) == ("2" * 40, "old")
    assert first_b is not None and first_b.sha == "1" * 40  # not the other agent's
    assert commits.first("c") is None


def test_a_line_break_inside_a_value_never_breaks_a_line() -> None:
    text = json_text({"content": "one\u2028two\u2029three\x85four\nfive"})
    assert len(text.splitlines()) == 1
    assert json.loads(text)["content"] == "one\u2028two\u2029three\x85four\nfive"
    assert "".join(export_text("dspy", [])) == "[]\n"


# --- reverted decisions, forgotten lessons ------------------------------------------------------
def test_a_reverted_decision_is_left_out(curated: Site) -> None:
    before = curated.git("rev-parse", "HEAD").strip()
    commit = curated.git("log", "--format=%H", "--grep=^Feedback-Item: d1$").strip()
    done = subprocess.run(
        ["git", "revert", "--no-edit", commit], cwd=curated.root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(exported(curated, "dspy"))
    assert len(rows) == 4 and all("Generics" not in row["input"] for row in rows)
    assert len(lines(exported(curated, "openai-dpo"))) == 2
    assert len(json.loads(exported(curated, "dspy", at=before))) == 5


def test_a_forgotten_lesson_is_left_out_and_the_decision_stays(
    curated: Site, tmp_path: Path
) -> None:
    entries = {(e.get("queueItemId"), e.get("field")): e["id"] for e in curated.feedback(AGENT)}
    for key in [("d1", "title"), ("d5", "seo.metaTitle"), ("d3", None)]:
        done = curated.cli("forget", AGENT, entries[key])
        assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in hf_rows(curated, tmp_path)}
    assert len(rows) == 5  # every decision stays
    assert rows["d1"]["corrections"] == [] and rows["d1"]["approved"] != rows["d1"]["draft"]
    assert [c["field"] for c in rows["d5"]["corrections"]] == ["title"]
    assert rows["d3"]["notes"] is None
    dpo = [check_dpo_line(line) for line in lines(exported(curated, "openai-dpo"))]
    assert [json.loads(p[1]).get("title", "") for p in dpo[1:]] == ["Pricing that scales"]
    assert len(dpo) == 2  # d1's only lesson was taken back


# --- --at ---------------------------------------------------------------------------------------
def test_at_before_the_agent_existed_is_an_empty_export(curated: Site, tmp_path: Path) -> None:
    first = curated.git("rev-list", "--max-parents=0", "HEAD").strip()
    for at in (first, "2000-01-01"):
        for name in ("openai-sft", "openai-dpo"):
            done = curated.cli("export", AGENT, "--format", name, "--at", at)
            assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done.stderr
    assert exported(curated, "dspy", at=first) == b"[]\n"
    out = tmp_path / "empty"
    write_export(open_export(curated.runtime(), AGENT, "hf", first), out, io.BytesIO())
    assert hf_data(out).read_bytes() == b""
    assert "- decided items: 0\n" in (out / "README.md").read_text()


def test_at_a_date_is_the_last_commit_made_by_then(curated: Site) -> None:
    assert exported(curated, "dspy", at="2999-01-01") == exported(curated, "dspy")
    assert exported(curated, "openai-sft", at="HEAD~1") == exported(
        curated, "openai-sft", at="HEAD^"
    )
    assert len(lines(exported(curated, "openai-sft", at="HEAD~1"))) == 3  # before d5's approval


def test_a_renamed_agent_exports_its_whole_history(curated: Site, tmp_path: Path) -> None:
    before = curated.git("rev-parse", "HEAD").strip()
    old = hf_rows(curated, tmp_path)
    (curated.data / "agents" / AGENT).rename(curated.data / "agents" / "w2")
    curated.reconcile()
    assert curated.git("log", "-1", "--format=%s").strip() == "rename(w2): from w"
    renamed = hf_rows(curated, tmp_path, agent="w2")
    assert renamed == [{**row, "agent": "w2"} for row in old]
    assert all(row["commit"] and row["draft"] for row in renamed)
    assert hf_rows(curated, tmp_path, at=before, agent="w2") == renamed


# --- where the data comes from --------------------------------------------------------------------
def test_export_reads_the_commit_never_the_work_tree(curated: Site) -> None:
    committed = exported(curated, "openai-sft")
    approved = curated.agent(AGENT) / "approved" / "d1.json"
    approved.write_text(json.dumps(draft({"title": "Not committed yet"})) + "\n")
    curated.write(AGENT, "d9.json", draft({"title": "Uncommitted"}), folder="approved")
    status = curated.git("status", "--porcelain")
    stamp = approved.stat().st_mtime_ns
    assert exported(curated, "openai-sft") == committed
    assert curated.git("status", "--porcelain") == status and approved.stat().st_mtime_ns == stamp


def test_a_draft_moved_and_committed_by_hand_keeps_its_first_version(site: Site) -> None:
    site.write(AGENT, "d1.json", draft({"title": "Agent's title"}))
    site.reconcile()  # the draft's commit
    site.write(AGENT, "d1.json", draft({"title": "Curator's title"}))
    site.git("mv", f"_data/agents/{AGENT}/queue/d1.json", f"_data/agents/{AGENT}/approved/d1.json")
    site.git("add", "-A", f"_data/agents/{AGENT}/approved")
    site.git("commit", "-qm", "approve d1 by hand")
    site.reconcile()  # feedbackd records the decision
    [line] = lines(exported(site, "openai-dpo"))
    _, preferred, drafted = check_dpo_line(line)
    assert json.loads(drafted) == {"title": "Agent's title"}
    assert json.loads(preferred) == {"title": "Curator's title"}


def test_a_webhouse_sites_items_come_from_its_queue_file_even_once_purged(
    site: Site, tmp_path: Path
) -> None:
    site.configure("webhouse:\n  queue_file: _data/curation-queue.json\n")
    admin = WebhouseAdmin(site.root, age_s=60)
    kept = admin.generate("cms", {"title": "Why Generics", "excerpt": "E."})
    dropped = admin.generate("cms", {"title": "Ten tips", "excerpt": "E."})
    admin.edit(kept, {"title": "How Generics Save You"})
    admin.approve(kept)
    admin.reject(dropped, "Off-brand")
    site.reconcile()
    rows = hf_rows(site, tmp_path, agent="cms")
    # Decided in one pass, the rows go by item id; two ids webhouse made in the same
    # millisecond differ only in their random ending.
    assert [(row["id"], row["decision"], row["notes"]) for row in rows] == sorted(
        [(kept, "approved", None), (dropped, "rejected", "Off-brand")]
    )
    [approved] = [row for row in rows if row["id"] == kept]
    assert approved["corrections"] == [
        {"field": "title", "original": "Why Generics", "corrected": "How Generics Save You"}
    ]
    assert approved["input"] == 'Write the posts item "why-generics".'
    # webhouse purges decided items after a while; their decisions, and the export, stay
    for item in (kept, dropped):
        admin.backdate(item, 40)
    assert admin.purge(30) == 2
    site.git("commit", "-qam", "webhouse purged its old items")
    assert hf_rows(site, tmp_path, agent="cms") == rows


def test_the_input_template_comes_from_the_configuration(site: Site) -> None:
    site.configure("export:\n  input_template: 'Item {id} of {agent} ({slug}) {{draft}}'\n")
    site.write(AGENT, "d1.json", draft({"title": "T"}, slug="s"), folder="approved")
    site.reconcile()
    [line] = lines(exported(site, "openai-sft"))
    assert check_sft_line(line)[0] == "Item d1 of w (s) {draft}"
    for bad in ("{title}", "{slug!r}", "{id:>4}", "{unclosed"):
        with pytest.raises(ValueError, match="input_template"):
            Settings.model_validate({"export": {"input_template": bad}})


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (("--format", "jsonl"), 2, "error: usage: unknown export format 'jsonl' (choose one of:"
         " openai-sft, openai-dpo, trl-sft, trl-dpo, trl-kto, dspy, hf)"),
        ((), 2, "error: usage: --format is missing (choose one of: openai-sft, openai-dpo"),
        (("--format", "dspy", "--at", "not a time"), 2, "error: usage: --at 'not a time' is"
         " neither a revision nor a date"),
        (("--format", "hf"), 2, "error: usage: --format hf writes a dataset folder"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_what_to_do(
    curated: Site, args: tuple[str, ...], code: int, said: str
) -> None:
    done = curated.cli("export", AGENT, *args)
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith(said), done.stderr


def test_an_unknown_agent_is_not_found_with_the_agents_there_are(curated: Site) -> None:
    done = curated.cli("export", "ww", "--format", "dspy")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "error: not_found: no agent ww in _data/agents/: did you mean w? (the agents are: w)\n"
    )
    assert curated.cli("export", "../w", "--format", "dspy").returncode == 1


# --- over HTTP ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_http_streams_the_jsonl_formats(curated: Site, server: Server) -> None:
    answer = server.get(f"/api/agents/{AGENT}/export?format=openai-dpo")
    assert answer.status == 200
    assert answer.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    assert answer.body == exported(curated, "openai-dpo")
    then = server.get(f"/api/agents/{AGENT}/export?format=dspy&at=HEAD~1")
    assert then.headers["content-type"].startswith("application/json")
    default = io.BytesIO()  # dspy over HTTP leaves rejections out, as the command does
    write_export(open_export(curated.runtime(), AGENT, "dspy", "HEAD~1"), None, default)
    assert then.body == default.getvalue() and b'"output": null' not in then.body
    refused = {
        "format=hf": (400, "usage"),
        "format=csv": (400, "usage"),
        "format=dspy&at=yesterday%3F": (400, "usage"),
    }
    for query, (status, code) in refused.items():
        answer = server.get(f"/api/agents/{AGENT}/export?{query}")
        assert (answer.status, answer.json()["error"]) == (status, code), query
    missing = server.get(f"/api/agents/{AGENT}/export").json()
    streams = "HTTP streams openai-sft, openai-dpo, trl-sft, trl-dpo, trl-kto, dspy"
    assert missing["message"].startswith(f"format= is missing: {streams} (")
    folder = server.get(f"/api/agents/{AGENT}/export?format=hf").json()["message"]
    assert folder.startswith(f"format=hf: {streams}") and "--out DIR" in folder
    unknown = server.get("/api/agents/nobody/export?format=openai-sft")
    assert (unknown.status, unknown.json()["error"]) == (404, "not_found")


# --- git, read in bulk ------------------------------------------------------------------------
def test_many_objects_are_read_in_groups_that_fit_a_pipe(git_repo: Path) -> None:
    """More names than one pipe holds at once come back whole and in order, and a name that
    names nothing (or cannot be asked: a line break) is None, not the end of the answers."""
    for number in range(3):
        (git_repo / f"f{number}.txt").write_text(f"file {number}\n" * (number + 1))
    subprocess.run(["git", "add", "."], cwd=git_repo, check=True)
    subprocess.run(["git", "commit", "-qm", "three files"], cwd=git_repo, check=True)
    names = [f"HEAD:f{number % 3}.txt" for number in range(3000)]  # about 40 KiB of names
    names[7], names[8] = "HEAD:nowhere.txt", "HEAD:bad\nname"
    with GitRepo(git_repo) as repo:
        found = list(history_of(repo).blobs(names))
    assert found[7] is None and found[8] is None
    expected = [f"file {n % 3}\n".encode() * (n % 3 + 1) for n in range(3000)]
    assert [data for n, data in enumerate(found) if n not in (7, 8)] == [
        data for n, data in enumerate(expected) if n not in (7, 8)
    ]
