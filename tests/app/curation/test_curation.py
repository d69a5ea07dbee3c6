"""The curation loop end to end: real files, real git, the same pipeline the daemon runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from feedbackd import load_feedback_for_prompt
from tests.workspace_kit import Site, draft

TITLE_OLD = "Why TypeScript Generics Matter"
TITLE_NEW = "How TypeScript Generics Save You From Refactoring Hell"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def test_approve_records_one_correction_per_changed_field(site: Site) -> None:
    original = {"title": TITLE_OLD, "excerpt": "Same.", "seo": {"metaTitle": "Generics"}}
    current = {"title": TITLE_NEW, "excerpt": "Same.", "seo": {"metaTitle": "Generics 101"}}
    site.write("content-writer", "qi-1.json", draft(current, original), folder="approved")
    site.reconcile()
    entries = site.feedback("content-writer")
    assert [(e["field"], e["original"], e["corrected"]) for e in entries] == [
        ("title", TITLE_OLD, TITLE_NEW),
        ("seo.metaTitle", "Generics", "Generics 101"),
    ]
    assert all(e["type"] == "correction" and e["queueItemId"] == "qi-1" for e in entries)
    assert site.git("log", "-1", "--format=%s") == (
        "approve(content-writer): qi-1, 2 corrections (title, seo.metaTitle)\n"
    )
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["approve"]
    assert trailers["Feedback-Agent"] == ["content-writer"]
    assert trailers["Feedback-Item"] == ["qi-1"]
    assert trailers["Feedback-Fields"] == ["title, seo.metaTitle"]
    body = site.git("log", "-1", "--format=%b")
    assert f'- title: "{TITLE_OLD}" → "{TITLE_NEW}"' in body


def test_whitespace_and_line_ending_changes_are_not_corrections(site: Site) -> None:
    original = {"title": "Hello", "body": "Line one\nLine two", "tags": ["a"], "count": 1}
    current = {"title": "Hello  \n", "body": "Line one\r\nLine two", "tags": ["b"], "count": 2}
    site.write("w", "qi-1.json", draft(current, original), folder="approved")
    site.reconcile()
    assert site.feedback("w") == []
    assert site.git("log", "-1", "--format=%s") == "approve(w): qi-1, no corrections\n"


def test_moving_a_draft_from_queue_is_an_approval_against_the_first_seen_draft(
    site: Site,
) -> None:
    site.write("w", "qi-1.json", draft({"title": TITLE_OLD, "excerpt": "Short."}))
    site.reconcile()
    assert site.git("log", "-1", "--format=%s") == "draft(w): 1 new draft (qi-1)\n"
    site.write("w", "qi-1.json", draft({"title": TITLE_NEW, "excerpt": "Longer."}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    assert [(e["field"], e["original"]) for e in site.feedback("w")] == [
        ("title", TITLE_OLD),
        ("excerpt", "Short."),
    ]
    changed = site.git("show", "--name-status", "--no-renames", "--format=", "HEAD")
    assert "D\t_data/agents/w/queue/qi-1.json" in changed
    assert "A\t_data/agents/w/approved/qi-1.json" in changed
    assert site.git("status", "--porcelain") == ""


def test_yaml_and_markdown_items_are_equal_citizens(site: Site) -> None:
    site.write("w", "qi-y.yaml", "contentData:\n  title: Old yaml\n")
    site.write("w", "qi-m.md", "---\ntitle: Old md\nslug: x\n---\nOld body\n")
    site.reconcile()
    site.write("w", "qi-y.yaml", "contentData:\n  title: New yaml\n")
    site.write("w", "qi-m.md", "---\ntitle: New md\nslug: x\n---\nNew body\n")
    site.move("w", "qi-y.yaml", "approved")
    site.move("w", "qi-m.md", "approved")
    site.reconcile()
    pairs = {(e["queueItemId"], e["field"], e["corrected"].strip()) for e in site.feedback("w")}
    assert pairs == {
        ("qi-y", "title", "New yaml"),
        ("qi-m", "title", "New md"),
        ("qi-m", "body", "New body"),
    }


def test_the_snippet_is_regenerated_with_the_exact_text(site: Site) -> None:
    site.write(
        "w", "qi-1.json", draft({"title": TITLE_NEW}, {"title": TITLE_OLD}), folder="approved"
    )
    site.reconcile()
    assert site.prompt("w") == (
        f"## Learn from past corrections\nExample 1:\nOriginal: {TITLE_OLD}\n"
        f"Corrected: {TITLE_NEW}\n"
    )
    assert load_feedback_for_prompt("w", workspace=site.root) == [
        {"original": TITLE_OLD, "corrected": TITLE_NEW, "field": "title"}
    ]
    assert site.cli("prompt", "w").stdout == site.prompt("w")


def test_a_markdown_body_correction_reads_cleanly_in_the_snippet(site: Site) -> None:
    """The body of a .md item ends with its newline (and maybe CRLF endings): the entry keeps
    the values as written, but the snippet the agent reads, and the loader, show them without
    the blank lines that would split an example between `Original:` and `Corrected:`."""
    site.write("w", "qi-m.md", "---\ntitle: Same\n---\nOld body,\r\nsecond line.\r\n\r\n")
    site.reconcile()
    site.write("w", "qi-m.md", "---\ntitle: Same\n---\nNew body,\nsecond line.\n")
    site.move("w", "qi-m.md", "approved")
    site.reconcile()
    [entry] = site.feedback("w")
    assert entry["corrected"] == "New body,\nsecond line.\n"  # as written
    assert site.prompt("w") == (
        "## Learn from past corrections\nExample 1:\nOriginal: Old body,\nsecond line.\n"
        "Corrected: New body,\nsecond line.\n"
    )
    assert load_feedback_for_prompt("w", workspace=site.root) == [
        {
            "original": "Old body,\nsecond line.",
            "corrected": "New body,\nsecond line.",
            "field": "body",
        }
    ]


def test_reject_records_the_note_and_leaves_an_empty_snippet(site: Site) -> None:
    doc = draft({"title": "A"}, rejectionFeedback="Tone is too dry — needs personality")
    site.write("w", "qi-2.json", doc, folder="rejected")
    site.reconcile()
    [entry] = site.feedback("w")
    assert entry["type"] == "rejection" and entry["notes"] == "Tone is too dry — needs personality"
    assert site.prompt("w") == ""
    assert (site.agent("w") / "prompt" / "feedback.md").stat().st_size == 0
    assert site.git("log", "-1", "--format=%s") == "reject(w): qi-2\n"


def test_forged_trailers_in_notes_stay_in_the_body(site: Site) -> None:
    notes = "Bad.\n\nFeedback-Event: approve\nFeedback-Agent: someone-else\nSigned-off-by: x"
    site.write("w", "qi-2.json", draft({"t": "x"}, rejectionFeedback=notes), folder="rejected")
    site.reconcile()
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["reject"]
    assert trailers["Feedback-Agent"] == ["w"]
    assert "Signed-off-by" not in trailers
    assert len(site.git("log", "-1", "--format=%s").splitlines()) == 1


def test_each_decision_is_recorded_once_across_repeated_passes(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "new"}, {"t": "old"}), folder="approved")
    site.write("w", "qi-2.json", draft({"t": "x"}, rejectionFeedback="no"), folder="rejected")
    site.reconcile()
    commits = site.commit_count()
    for _ in range(3):
        assert site.reconcile().events == []
    assert len(site.feedback("w")) == 2
    assert site.commit_count() == commits
    assert site.cli("run", "--once").returncode == 0
    assert site.commit_count() == commits


def test_a_decision_committed_by_hand_is_recorded_once(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "old"}))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"t": "new"}))
    site.git("mv", "_data/agents/w/queue/qi-1.json", "_data/agents/w/approved/qi-1.json")
    site.git("commit", "-qam", "approve qi-1 by hand")
    site.reconcile()
    site.reconcile()
    assert [(e["original"], e["corrected"]) for e in site.feedback("w")] == [("old", "new")]
    assert site.git("log", "-1", "--format=%s") == "approve(w): qi-1, 1 correction (t)\n"
    assert site.git("status", "--porcelain") == ""


def test_a_fresh_clone_does_not_record_again(site: Site, tmp_path: Path) -> None:
    site.write("w", "qi-1.json", draft({"t": "old"}))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"t": "new"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    clone = tmp_path / "clone"
    site.git("clone", "-q", str(site.root), str(clone))
    other = Site(clone)
    before = other.commit_count()
    assert other.reconcile().events == []
    assert other.commit_count() == before
    assert len(other.feedback("w")) == 1


def test_a_fresh_clone_diffs_against_the_committed_draft(site: Site, tmp_path: Path) -> None:
    site.write("w", "qi-1.json", draft({"t": "as drafted"}))
    site.reconcile()
    clone = tmp_path / "clone"
    site.git("clone", "-q", str(site.root), str(clone))
    other = Site(clone)
    other.write("w", "qi-1.json", draft({"t": "as edited"}))
    other.reconcile()  # sees the edited draft first: its snapshot must not win over git
    other.move("w", "qi-1.json", "approved")
    other.reconcile()
    assert [(e["original"], e["corrected"]) for e in other.feedback("w")] == [
        ("as drafted", "as edited")
    ]


def test_a_draft_moved_back_to_queue_is_committed_there(site: Site) -> None:
    """`git clean`, a fresh clone or another machine keeps the draft back in queue/."""
    site.write("w", "d1.json", draft({"t": "drafted"}))
    site.reconcile()
    site.move("w", "d1.json", "approved")
    site.reconcile()
    site.move("w", "d1.json", "queue", source="approved")
    site.reconcile()
    assert site.git("show", "--name-status", "--format=%s", "HEAD").split("\n")[0] == (
        "draft(w): back in queue: d1"
    )
    assert site.git("ls-files", "_data/agents/w/queue") == "_data/agents/w/queue/d1.json\n"
    assert site.git("status", "--porcelain", "--", "_data") == ""


def test_moved_back_to_queue_then_decided_again(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "new"}, {"t": "old"}), folder="approved")
    site.reconcile()
    site.move("w", "qi-1.json", "queue", source="approved")
    site.reconcile()
    assert "back in queue: qi-1" in site.git("log", "-1", "--format=%s")
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    assert len(site.feedback("w")) == 1  # the same correction is never written twice
    site.move("w", "qi-1.json", "queue", source="approved")
    site.reconcile()
    site.write("w", "qi-1.json", draft({"t": "newer"}, {"t": "old"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    assert [e["corrected"] for e in site.feedback("w")] == ["new", "newer"]


def test_an_approval_whose_correction_is_recorded_already_says_so(site: Site) -> None:
    original = {"title": "Draft"}
    for title in ("First", "Second"):
        site.write("w", "d1.json", draft({"title": title}, original))
        site.move("w", "d1.json", "approved")
        site.reconcile()
        assert site.git("log", "-1", "--format=%s") == "approve(w): d1, 1 correction (title)\n"
        site.move("w", "d1.json", "queue", source="approved")
        site.reconcile()
    site.write("w", "d1.json", draft({"title": "First"}, original))
    site.move("w", "d1.json", "approved")
    site.reconcile()  # the third approval: title "First" was recorded by the first one
    assert [e["corrected"] for e in site.feedback("w")] == ["First", "Second"]
    subject = site.git("log", "-1", "--format=%s").strip()
    assert subject == "approve(w): d1, no new corrections (title already recorded)"
    assert site.git("log", "-1", "--format=%b").strip().startswith("Feedback-")  # no body line
    # What the decision corrected, as its ledger line says; no entry claimed for it.
    assert site.trailers()["Feedback-Fields"] == ["title"]
    last = json.loads((site.agent("w") / "decisions.jsonl").read_text().splitlines()[-1])
    assert last["fields"] == ["title"] and last.get("entries") is None


def test_never_seen_and_no_original_means_no_corrections_and_a_warning(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "x"}), folder="approved")
    report = site.reconcile()
    assert site.feedback("w") == []
    assert any("never seen in queue/" in warning for warning in report.warnings)
    assert site.git("log", "-1", "--format=%s") == "approve(w): qi-1, no corrections\n"


def test_the_cap_keeps_the_newest_entries(site: Site) -> None:
    site.configure("feedback:\n  max_entries: 3\n")
    for number in range(5):
        doc = draft({"t": f"new {number}"}, {"t": f"old {number}"})
        site.write("w", f"qi-{number}.json", doc, folder="approved")
    site.reconcile()
    assert [e["corrected"] for e in site.feedback("w")] == ["new 2", "new 3", "new 4"]


def test_legacy_entries_are_rewritten_in_the_full_shape(site: Site) -> None:
    site.write("w", "feedback.json", '[{"original": "Old", "corrected": "New"}]', folder=".")
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    legacy, new = site.feedback("w")
    assert legacy["type"] == "correction" and legacy["id"].startswith("legacy-")
    assert legacy["createdAt"] == "1970-01-01T00:00:00.000Z"
    assert new["corrected"] == "b"
    assert "Original: Old\nCorrected: New" in site.prompt("w")


def test_author_is_the_curator_and_committer_is_feedbackd(site: Site) -> None:
    doc = draft({"t": "b"}, {"t": "a"}, curator="Kim Editor <kim@example.org>")
    site.write("w", "qi-1.json", doc, folder="approved")
    site.reconcile()
    who = site.git("log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
    assert who == "Kim Editor <kim@example.org>|feedbackd <feedbackd@localhost>"


def test_feedbackd_authors_its_own_acts_and_buyers_their_ratings(site: Site) -> None:
    """The person running feedbackd (git's user here: Ada Curator) authors their decisions
    only: drafts seen, snippets regenerated and price cuts are feedbackd's, a rating is its
    buyer's; the committer is feedbackd throughout."""
    soul = site.agent("p") / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("# P\n\nRuns things.\n\n## s1\nRuns it.\npricing: 20\n")
    site.write("w", "qi-1.json", draft({"title": "Old"}))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"title": "New"}))
    assert site.cli("approve", "w", "qi-1").returncode == 0
    for number in (1, 2, 3):
        rating = {
            "transaction_id": f"00000000-0000-4000-8000-00000000000{number}",
            "provider_agent": "p",
            "skill_id": "s1",
            "rating": 3,
            "result_quality": "good",
            "would_reuse": True,
            "cost_value_ratio": "overpriced",
        }
        done = site.cli(
            "feedback", "submit", "--as", f"buyer-{number}", "--json", json.dumps(rating)
        )
        assert done.returncode == 0, done.stderr
    site.configure("prompt:\n  show_field: true\n")  # the next pass regenerates the snippet
    site.reconcile()
    authors = {}
    for line in site.git("log", "--format=%s|%an <%ae>|%cn").splitlines():
        subject, author, committer = line.split("|")
        assert committer == "feedbackd", line
        authors.setdefault(subject.split("(")[0], set()).add(author)
    assert authors["approve"] == {"Ada Curator <ada@example.org>"}
    for event in ("draft", "pricing", "sync"):
        assert authors[event] == {"feedbackd <feedbackd@localhost>"}, (event, authors)
    assert authors["rating"] == {f"buyer-{n} <buyer-{n}@localhost>" for n in (1, 2, 3)}
    mine = site.git("log", "--format=%s", "--author=Ada Curator").splitlines()
    assert [s.split("(")[0] for s in mine if not s.startswith("Set up")] == ["approve"]


def test_a_users_staged_and_unstaged_work_is_left_alone(site: Site) -> None:
    (site.root / "notes.txt").write_text("draft notes\n")
    site.git("add", "notes.txt")
    (site.root / "feedbackd.yaml").write_text("# my edit, not staged\n")
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    assert site.git("diff", "--cached", "--name-only") == "notes.txt\n"
    assert site.git("diff", "--name-only") == "feedbackd.yaml\n"
    assert "notes.txt" not in site.git("show", "--name-only", "--format=", "HEAD")


def test_a_stale_index_lock_is_removed(site: Site) -> None:
    (site.root / ".git" / "index.lock").write_bytes(b"")
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    assert not (site.root / ".git" / "index.lock").exists()
    assert site.trailers()["Feedback-Item"] == ["qi-1"]


def test_a_corrupt_feedback_file_is_never_overwritten(site: Site) -> None:
    corrupt = '[{"id": "fb-1", "type": "correction",'
    site.write("w", "feedback.json", corrupt, folder=".")
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    feedback = site.agent("w") / "feedback.json"
    assert feedback.read_text() == corrupt
    explanation = (site.agent("w") / "feedback.json.error").read_text()
    assert explanation.startswith("feedbackd: feedback.json is not valid JSON")
    feedback.write_text("[]\n")
    site.reconcile()
    assert not (site.agent("w") / "feedback.json.error").exists()
    assert [e["corrected"] for e in site.feedback("w")] == ["b"]


BAD_FILES = {
    "malformed.json": b'{"contentData": ',
    "anchors.yaml": b"contentData: &c\n  title: x\noriginalContentData: *c\n",
    "wrong-type.json": b'{"contentData": ["not", "an", "object"]}',
    "not-utf8.json": b'{"contentData": {"title": "\xff\xfe"}}',
    "huge.json": b'{"contentData": {"body": "' + b"x" * (1024 * 1024) + b'"}}',
    "bad id.json": b'{"contentData": {}}',
    "id-mismatch.json": b'{"id": "other", "contentData": {}}',
}


def test_bad_files_are_explained_and_never_touched(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    for name, data in BAD_FILES.items():
        site.write("w", name, data, folder="approved")
    site.write("w", "qi-good.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    approved = site.agent("w") / "approved"
    for name, data in BAD_FILES.items():
        assert (approved / name).read_bytes() == data
        lines = (approved / f"{name}.error").read_text().splitlines()
        assert lines[0].startswith("feedbackd: ") and len(lines) == 2, name
    assert [e["queueItemId"] for e in site.feedback("w")] == ["qi-good"]
    assert "(line 1, column" in (approved / "malformed.json.error").read_text()


def test_a_half_written_file_waits_for_the_settle_time(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 60000\n")
    half = b'{"contentData": {"t": "b"}, "originalConte'
    path = site.write("w", "qi-1.json", half, "approved", fresh=True)
    report = site.reconcile()
    assert not Path(f"{path}.error").exists()
    assert [problem.path for problem in report.unsettled] == [path]
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    assert site.reconcile().unsettled == []
    assert [e["corrected"] for e in site.feedback("w")] == ["b"]


def test_a_valid_half_written_yaml_waits_for_the_settle_time(site: Site) -> None:
    """A partial YAML file is often valid YAML: no decision until the file has settled."""
    site.configure("daemon:\n  settle_ms: 60000\n")
    drafted = "contentData:\n  title: Drafted title\n  body: Drafted body\n"
    site.write("y", "y2.yaml", drafted)
    site.reconcile()
    site.move("y", "y2.yaml", "approved")
    edited = "contentData:\n  title: Edited title\n  body: Edited body\n"
    half = site.write("y", "y2.yaml", edited.split("  body")[0], "approved", fresh=True)
    report = site.reconcile()
    assert [problem.path for problem in report.unsettled] == [half]
    assert site.feedback("y") == [] and not Path(f"{half}.error").exists()
    assert "approve(y)" not in site.git("log", "--format=%s")
    site.write("y", "y2.yaml", edited, "approved")
    assert site.reconcile().unsettled == []
    assert {e["field"]: e["corrected"] for e in site.feedback("y")} == {
        "title": "Edited title",
        "body": "Edited body",
    }


def test_a_fixed_file_loses_its_error_and_is_processed(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    path = site.write("w", "qi-1.json", b"{oops", folder="approved")
    site.reconcile()
    assert Path(f"{path}.error").exists()
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    assert not Path(f"{path}.error").exists()
    assert len(site.feedback("w")) == 1


def test_a_symlink_leading_outside_is_ignored_and_reported(site: Site, tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(draft({"t": "b"}, {"t": "a"})))
    (site.agent("w") / "approved").mkdir(parents=True)
    (site.agent("w") / "approved" / "qi-1.json").symlink_to(outside)
    report = site.reconcile()
    assert site.feedback("w") == []
    assert any("outside the workspace" in warning for warning in report.warnings)


def test_a_decision_written_but_never_committed_is_committed_by_the_next_pass(
    site: Site,
) -> None:
    # What a pass killed between its writes and its commit leaves: files, no commit.
    site.configure("git:\n  enabled: false\n")
    site.write("w", "qi-1.json", draft({"t": "new"}, {"t": "old"}), folder="approved")
    site.reconcile()
    assert site.git("status", "--porcelain", "--", "_data") != ""
    site.configure("")
    site.reconcile()
    assert site.git("status", "--porcelain", "--", "_data") == ""
    assert "qi-1 (completed after an interruption)" in site.git("log", "-1", "--format=%s")
    trailers = site.trailers()
    assert trailers["Feedback-Item"] == ["qi-1"] and trailers["Feedback-Fields"] == ["t"]
    assert len(site.feedback("w")) == 1


def test_a_snippet_written_but_never_committed_is_committed_by_the_next_pass(site: Site) -> None:
    """A pass killed after it wrote the regenerated snippet, before its commit: the snippet on
    disk is already what feedback.json makes, yet HEAD holds the one before."""
    site.write("w", "qi-1.json", draft({"t": "a"}, rejectionFeedback="Too dry."), "rejected")
    site.reconcile()
    assert "Too dry." not in site.prompt("w")
    site.configure("git:\n  enabled: false\nprompt:\n  include_rejections: true\n")
    site.reconcile()
    assert "Too dry." in site.prompt("w")
    assert site.git("status", "--porcelain", "--", "_data").split() == [
        "M",
        "_data/agents/w/prompt/feedback.md",
    ]
    site.configure("prompt:\n  include_rejections: true\n")
    site.reconcile()
    assert site.git("status", "--porcelain", "--", "_data") == ""
    assert site.git("log", "-1", "--format=%s") == "sync(w): regenerate prompt snippet\n"
    assert "Too dry." in site.git("show", "HEAD:_data/agents/w/prompt/feedback.md")
    commits = site.commit_count()
    site.reconcile()
    assert site.commit_count() == commits


def test_a_rewritten_file_keeps_its_mode(site: Site) -> None:
    """A curator's `chmod 444 feedback.json` stays: the new entries land, the mode is kept."""
    for name in ("qi-1", "qi-2"):
        site.write("w", f"{name}.json", draft({"t": "drafted"}))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"t": "edited once"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    feedback = site.root / "_data/agents/w/feedback.json"
    feedback.chmod(0o444)
    site.write("w", "qi-2.json", draft({"t": "edited twice"}))
    site.move("w", "qi-2.json", "approved")
    site.reconcile()
    assert [e["corrected"] for e in site.feedback("w")] == ["edited once", "edited twice"]
    assert stat.S_IMODE(feedback.stat().st_mode) == 0o444


@pytest.mark.parametrize("damage", ["deleted", "emptied", "cut"])
def test_a_lost_ledger_is_restored_from_history_never_decided_again(
    site: Site, damage: str
) -> None:
    """The decision commits in git are the record of truth: ledger lines lost from
    decisions.jsonl come back from them, and no item gets a second decision commit."""
    for name in ("qi-1", "qi-2"):
        site.write("w", f"{name}.json", draft({"t": "drafted"}))
    site.write("w", "qi-3.json", draft({"t": "drafted"}, rejectionFeedback="No."))
    site.reconcile()
    for name, folder in (("qi-1", "approved"), ("qi-2", "approved"), ("qi-3", "rejected")):
        if folder == "approved":
            site.write("w", f"{name}.json", draft({"t": f"edited {name}"}))
        site.move("w", f"{name}.json", folder)
    site.reconcile()
    feedback, commits = site.feedback("w"), site.commit_count()
    ledger = site.agent("w") / "decisions.jsonl"
    if damage == "deleted":
        ledger.unlink()
    elif damage == "emptied":
        ledger.write_text("")
    else:
        ledger.write_text(ledger.read_text().splitlines()[0][:20] + "\n")
    site.reconcile()
    site.reconcile()
    assert site.feedback("w") == feedback
    states = {
        json.loads(line)["item"]: json.loads(line)["state"]
        for line in ledger.read_text().splitlines()
        if line.startswith("{") and line.endswith("}")
    }
    assert states == {"qi-1": "approved", "qi-2": "approved", "qi-3": "rejected"}
    log = site.git("log", "--format=%s", f"-{site.commit_count() - commits}").splitlines()
    assert log == ["sync(w): restore 3 decisions from history (qi-1, qi-2, qi-3)"]
    assert site.git("status", "--porcelain") == ""
