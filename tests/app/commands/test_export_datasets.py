"""Datasets a trainer takes as they are (SPEC section 13): TRL's formats and the `hf` export's
TRL columns, splits by time and by item, duplicates dropped, the system message and the lessons
the agent read, metadata to join rows back, and dspy without rejections unless asked. The month
of test_export.py is played through the real pipeline; the `hf` folder is loaded with the real
`datasets`. TRL itself needs torch, so its rows are checked against TRL's documented dataset
formats: conversational `prompt` (system and user turns) with `completion` (SFT), `chosen` and
`rejected` (DPO), or `completion` and a boolean `label` (KTO)."""

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
from feedbackd.core.curation.exportsplits import ExportOptions, parse_split
from tests.app.commands.test_export import (
    AGENT,
    a_month,
    decide,
    hf_data,
    lines,
    load_with_datasets,
)
from tests.conftest import known_environment
from tests.workspace_kit import Site, draft


@pytest.fixture(scope="module")
def month_made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """test_export.py's month of curation, made once for the module's tests to copy."""
    with known_environment(tmp_path_factory.mktemp("home")):
        site = Site(tmp_path_factory.mktemp("a-month") / "ws")
        a_month(site)
        yield site


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "ws")


@pytest.fixture
def curated(month_made: Site, tmp_path: Path) -> Site:
    return month_made.copy_to(tmp_path / "ws")


META_KEYS = ["id", "decision", "curator", "decided_at", "commit"]


def exported(site: Site, export_format: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    opened = open_export(site.runtime(), AGENT, export_format, None, ExportOptions(**options))
    write_export(opened, None, buffer)
    return buffer.getvalue()


def messages(value: Any, roles: list[str]) -> list[str]:
    """A conversational column: role/content messages in these roles; their contents."""
    assert isinstance(value, list) and [m["role"] for m in value] == roles, value
    assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in value)
    return [m["content"] for m in value]


# --- TRL ----------------------------------------------------------------------------------------
def test_trl_sft_is_prompt_and_completion_per_approved_item(curated: Site) -> None:
    rows = lines(exported(curated, "trl-sft"))
    assert len(rows) == 4
    for row in rows:
        assert list(row) == ["prompt", "completion", "metadata"]
        messages(row["prompt"], ["user"]), messages(row["completion"], ["assistant"])
        assert list(row["metadata"]) == META_KEYS and row["metadata"]["decision"] == "approved"
    assert messages(rows[1]["prompt"], ["user"]) == ["Explain ownership"]
    assert json.loads(rows[0]["completion"][0]["content"])["title"] == "How Generics Save You"


def test_trl_dpo_is_prompt_chosen_rejected_per_corrected_item(curated: Site) -> None:
    rows = lines(exported(curated, "trl-dpo"))
    assert len(rows) == 3
    for row in rows:
        assert list(row) == ["prompt", "chosen", "rejected", "metadata"]
        chosen = messages(row["chosen"], ["assistant"])
        assert chosen != messages(row["rejected"], ["assistant"])
    assert json.loads(rows[0]["rejected"][0]["content"])["title"] == "Why Generics Matter"


def test_trl_kto_labels_approvals_desirable_and_rejections_undesirable(curated: Site) -> None:
    rows = lines(exported(curated, "trl-kto"))
    assert [(row["metadata"]["id"], row["label"]) for row in rows] == [
        ("d1", True), ("d2", True), ("d3", False), ("d4", True), ("d5", True),
    ]  # fmt: skip
    for row in rows:
        assert list(row) == ["prompt", "completion", "label", "metadata"]
        assert isinstance(row["label"], bool)
    assert json.loads(rows[2]["completion"][0]["content"]) == {"title": "Ten tips"}


def test_the_hf_export_carries_the_trl_columns(curated: Site, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    write_export(open_export(curated.runtime(), AGENT, "hf", None), out, io.BytesIO())
    loaded = load_with_datasets(out, tmp_path)
    assert loaded["columns"][-5:] == ["prompt", "completion", "label", "chosen", "rejected"]
    rows = {row["id"]: row for row in lines(hf_data(out).read_bytes())}
    assert messages(rows["d1"]["prompt"], ["user"]) == [rows["d1"]["input"]]
    assert rows["d1"]["completion"][0]["content"] == rows["d1"]["approved"]
    assert rows["d1"]["chosen"] == rows["d1"]["completion"] and rows["d1"]["label"] is True
    assert rows["d1"]["rejected"][0]["content"] == rows["d1"]["draft"]
    assert rows["d2"]["chosen"] is None and rows["d2"]["rejected"] is None  # nothing corrected
    assert rows["d3"]["label"] is False and rows["d3"]["chosen"] is None
    assert rows["d3"]["completion"][0]["content"] == rows["d3"]["draft"]
    first = loaded["first"]
    assert first["label"] is True and first["prompt"] == rows["d1"]["prompt"]


# --- splits -------------------------------------------------------------------------------------
def test_a_time_split_puts_the_latest_decisions_in_validation(
    curated: Site, tmp_path: Path
) -> None:
    out = tmp_path / "sft.jsonl"
    done = curated.cli(
        "export", AGENT, "--format", "trl-kto", "--split", "time:0.6", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    train = [row["metadata"]["id"] for row in lines(out.read_bytes())]
    validation = [
        row["metadata"]["id"] for row in lines((tmp_path / "sft.validation.jsonl").read_bytes())
    ]
    assert (train, validation) == (["d1", "d2", "d3"], ["d4", "d5"])
    assert "2 in validation" in done.stderr


def test_a_hash_split_is_stable_per_item_and_hf_loads_both(curated: Site, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    options = ExportOptions(split=parse_split("hash:0.5"))
    write_export(open_export(curated.runtime(), AGENT, "hf", None, options), out, io.BytesIO())
    card = (out / "README.md").read_text()
    assert "  - split: train\n" in card and "  - split: validation\n" in card
    script_rows = load_splits(out, tmp_path)
    assert sorted(script_rows["train"] + script_rows["validation"]) == [
        "d1",
        "d2",
        "d3",
        "d4",
        "d5",
    ]
    assert script_rows["train"] and script_rows["validation"]
    sizes = f"train {len(script_rows['train'])}, validation {len(script_rows['validation'])}"
    assert f"- rows: {sizes}\n" in card
    again = tmp_path / "again"
    write_export(open_export(curated.runtime(), AGENT, "hf", None, options), again, io.BytesIO())
    assert load_splits(again, tmp_path) == script_rows


def load_splits(folder: Path, tmp_path: Path) -> dict[str, list[str]]:
    script = (
        "import json, sys, datasets\n"
        "loaded = datasets.load_dataset(sys.argv[1])\n"
        "print(json.dumps({name: list(loaded[name]['id']) for name in loaded}))\n"
    )
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf-home")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


# --- duplicates ---------------------------------------------------------------------------------
def test_dedup_keeps_the_newest_row_per_input(curated: Site, tmp_path: Path) -> None:
    curated.write(AGENT, "d6.json", draft({"title": "Ownership again"}, task="Explain ownership"))
    curated.reconcile()
    decide(
        curated,
        "d6.json",
        draft({"title": "Ownership, better"}, task="Explain ownership"),
        "approved",
    )
    out = tmp_path / "sft.jsonl"
    done = curated.cli("export", AGENT, "--format", "trl-sft", "--dedup", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = lines(out.read_bytes())
    assert [row["metadata"]["id"] for row in rows] == ["d1", "d4", "d5", "d6"]
    assert "1 duplicate dropped" in done.stderr
    assert len(lines(exported(curated, "trl-sft"))) == 5
    folder = tmp_path / "dataset"
    opened = open_export(curated.runtime(), AGENT, "hf", None, ExportOptions(dedup=True))
    write_export(opened, folder, io.BytesIO())
    card = (folder / "README.md").read_text()
    assert "- rows: train 5\n- duplicates dropped (--dedup): 1\n" in card


# --- the system message and the lessons the agent read ------------------------------------------
def test_the_system_message_is_the_configured_text_or_the_soul(curated: Site) -> None:
    curated.configure("export:\n  system: You write for a developer blog.\n")
    [first, *_] = lines(exported(curated, "openai-sft"))
    assert first["messages"][0] == {"role": "system", "content": "You write for a developer blog."}
    soul = "# Writer\n\nA careful technical writer.\n\n## Blog post\nPrice: 3\n"
    (curated.agent(AGENT) / "SOUL.md").write_text(soul)
    curated.git("add", "-A")
    curated.git("commit", "-qm", "a soul")
    curated.configure("export:\n  system: soul\n")
    [first, *_] = lines(exported(curated, "trl-dpo"))
    assert (
        messages(first["prompt"], ["system", "user"])[0]
        == "# Writer\n\nA careful technical writer."
    )


def test_with_snippet_puts_the_lessons_read_then_in_the_prompt(curated: Site) -> None:
    curated.write(AGENT, "d6.json", draft({"title": "Later"}, task="Write later"))
    curated.reconcile()
    decide(curated, "d6.json", draft({"title": "Later, better"}, task="Write later"), "approved")
    rows = lines(exported(curated, "trl-sft", with_snippet=True))
    assert messages(rows[0]["prompt"], ["user"]) == ['Write the posts item "generics".']
    [later] = messages(rows[-1]["prompt"], ["user"])
    assert later.startswith("Write later\n\n## Learn from past corrections\n")
    assert "How Generics Save You" in later and "Later, better" not in later


# --- metadata, dspy -----------------------------------------------------------------------------
def test_dspy_leaves_rejections_out_unless_asked_and_says_so(curated: Site) -> None:
    done = curated.cli("export", AGENT, "--format", "dspy")
    rows = json.loads(done.stdout)
    assert len(rows) == 4 and all(row["output"] is not None for row in rows)
    assert "1 rejection left out (--include-rejections keeps them)" in done.stderr
    assert list(rows[0]) == ["input", "draft", "output", "feedback", "metadata"]
    assert list(rows[0]["metadata"]) == META_KEYS
    kept = json.loads(exported(curated, "dspy", include_rejections=True))
    assert len(kept) == 5 and kept[2]["output"] is None


# --- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--format", "trl-orpo"), "error: usage: unknown export format 'trl-orpo'"),
        (("--format", "dspy", "--split", "random:0.5"), "error: usage: --split 'random:0.5'"),
        (("--format", "dspy", "--split", "time:1.5"), "error: usage: --split 'time:1.5'"),
        (("--format", "dspy", "--split", "hash:x"), "error: usage: --split 'hash:x'"),
        (("--format", "dspy", "--split", "hash:-0.1"), "error: usage: --split 'hash:-0.1'"),
        (("--format", "dspy", "--split", "time:0.9"), "error: usage: --split writes two files"),
    ],
)  # fmt: skip
def test_bad_options_are_usage_errors(curated: Site, args: tuple[str, ...], said: str) -> None:
    done = curated.cli("export", AGENT, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(said) and "Traceback" not in done.stderr, done.stderr


def test_a_missing_soul_is_a_usage_error(curated: Site) -> None:
    curated.configure("export:\n  system: soul\n")
    done = curated.cli("export", AGENT, "--format", "trl-sft")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: usage: export.system is soul, and"), done.stderr
    (curated.agent(AGENT) / "SOUL.md").write_bytes(b"# Writer\n\n\xff\xfe not text\n")
    curated.git("add", "-A")
    curated.git("commit", "-qm", "a soul that does not read")
    done = curated.cli("export", AGENT, "--format", "trl-sft")
    assert (done.returncode, done.stdout) == (2, "")
    assert "has a SOUL.md with no persona that reads" in done.stderr, done.stderr


# --- backfilling history ------------------------------------------------------------------------
def dated(monkeypatch: pytest.MonkeyPatch, moment: str) -> None:
    """The time git and feedbackd give what the next command does, as a user sets it."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", moment)
    monkeypatch.setenv("GIT_COMMITTER_DATE", moment)


def test_past_decisions_imported_with_git_dates_keep_their_times(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A team imports March: each draft committed and each decision made at its own time, with
    the commands a curator runs; stats and exports count them then, not on the day of import."""
    site.write(AGENT, "old1.json", draft({"title": "Dry"}, task="Post one"))
    site.write(AGENT, "old2.json", draft({"title": "Listicle"}, task="Post two"))
    dated(monkeypatch, "2026-03-02T09:00:00Z")
    assert site.cli("run", "--once").returncode == 0
    site.write(AGENT, "old1.json", draft({"title": "Lively"}, task="Post one"))
    dated(monkeypatch, "2026-03-03T10:30:00+00:00")
    assert site.cli("approve", AGENT, "old1", "--curator", "Ada <ada@example.org>").returncode == 0
    dated(monkeypatch, "@1773050400 +0000")  # git's own spelling: 2026-03-09T10:00:00Z
    assert site.cli("reject", AGENT, "old2", "--notes", "Off-brand").returncode == 0
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    rows = lines(exported(site, "trl-kto"))
    assert [row["metadata"]["decided_at"] for row in rows] == [
        "2026-03-03T10:30:00.000Z",
        "2026-03-09T10:00:00.000Z",
    ]
    stats = json.loads(site.cli("stats", AGENT, "--json", "--since", "2026-01-01").stdout)
    assert [(p["start"], p["decided"]) for p in stats["periods"] if p["decided"]] == [
        ("2026-03-02", 1), ("2026-03-09", 1),
    ]  # fmt: skip
    [entry] = [e for e in site.feedback(AGENT) if e["type"] == "correction"]
    assert entry["createdAt"] == "2026-03-03T10:30:00.000Z"


def test_a_git_date_feedbackd_cannot_read_is_a_usage_error(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.write(AGENT, "d1.json", draft({"title": "T"}))
    monkeypatch.setenv("GIT_AUTHOR_DATE", "last tuesday")
    done = site.cli("run", "--once")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("error: usage: GIT_AUTHOR_DATE 'last tuesday'"), done.stderr
