"""feedbackd on a webhouse CMS site: the curation queue file decides items by their status.

The queue is driven the way webhouse's admin app drives it (tests/webhouse_kit.py): generate,
edit with a shallow merge, approve (`published`), approve as a draft (`in_review`), reject with
rejectionFeedback, purge; webhouse's own feedback.json entries are written as webhouse writes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from feedbackd.core.curation.decisions import new_record
from feedbackd.core.curation.webhouseitems import parse_queue, to_decide
from feedbackd.core.errors import FeedbackdError
from feedbackd.edges.clock import utcnow
from feedbackd.edges.randomness import random_chars
from tests.cli_kit import run_cli
from tests.daemon_kit import DaemonProcess, NotifyListener, idle, wait_for
from tests.webhouse_kit import QUEUE, WebhouseAdmin, js_stringify
from tests.workspace_kit import Site

AGENT = "content-writer"
WEBHOUSE_CONFIG = "webhouse:\n  queue_file: _data/curation-queue.json\n"
ARTICLE = {
    "title": "Why TypeScript Generics Matter",
    "excerpt": "Generics explained.",
    "body": "Long text.",
    "seo": {"metaTitle": "Generics | Blog", "metaDescription": "All about generics."},
    "tags": ["ts"],
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.configure(WEBHOUSE_CONFIG)
    return site


@pytest.fixture
def admin(site: Site) -> WebhouseAdmin:
    return WebhouseAdmin(site.root, age_s=60)  # each write long settled, unless a test says


def queue_bytes(site: Site) -> bytes:
    return (site.root / QUEUE).read_bytes()


def run_once(site: Site) -> str:
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    return done.stderr + done.stdout


def subjects(site: Site) -> list[str]:
    return site.git("log", "--format=%s").splitlines()


def decisions(site: Site) -> list[str]:
    return [s for s in subjects(site) if s.startswith(("approve(", "reject("))]


def ledger(site: Site) -> list[dict[str, object]]:
    path = site.agent(AGENT) / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tracked_and_clean(site: Site, *paths: str) -> bool:
    return all(site.git("ls-files", path) and not site.git("status", "--porcelain", path)
               for path in paths)  # fmt: skip


# --- the queue file as data ---------------------------------------------------------------------
def entry(item_id: str, status: str, agent: str = AGENT, **extra: object) -> dict[str, object]:
    content = {"contentData": {"title": "new"}, "originalContentData": {"title": "old"}}
    return {"id": item_id, "agentId": agent, "status": status, "title": "T", **content, **extra}


def test_each_status_webhouse_writes_means_a_decision_or_a_draft() -> None:
    statuses = ["ready", "in_review", "approved", "published", "rejected"]
    queue = parse_queue(js_stringify([entry(f"qi-{s}", s) for s in statuses]).encode())
    assert {e.item.item_id: e.state for e in queue.decided} == {
        "qi-in_review": "approved",
        "qi-approved": "approved",
        "qi-published": "approved",
        "qi-rejected": "rejected",
    }
    assert queue.skipped == () and queue.agents() == [AGENT]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the curation queue is empty"),
        (b'[\n  {\n    "id": "qi-1",\n    "agentId', "the JSON ends before it is complete"),
        (b'{"id": "qi-1"}', "must be a JSON array of items"),
        (b'["\xff"]', "not UTF-8"),
        (b'[{"id": "qi-1", "id": "qi-2"}]', "appears twice"),
    ],
)
def test_a_queue_file_that_cannot_be_read_says_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(FeedbackdError) as raised:
        parse_queue(data)
    assert message in raised.value.message and raised.value.hint


def test_entries_that_cannot_be_used_are_named_and_the_others_decided() -> None:
    broken = [
        "not an object",
        entry("../evil", "published"),
        entry("qi-2", "published", agent="a/b"),
        entry("qi-3", "shipped"),
        entry("qi-4", "published", contentData="just text"),
        entry("qi-5", "rejected", rejectionFeedback=42),
        entry("qi-6", "published"),
        entry("qi-6", "rejected"),
    ]
    queue = parse_queue(js_stringify(broken).encode())
    assert [(e.item.item_id, e.state) for e in queue.decided] == [("qi-6", "approved")]
    reasons = queue.warnings_for(AGENT)
    assert reasons == [
        "curation queue entry 1 is not an object; ignored",
        "curation queue entry 2: id '../evil' is not a valid item id; ignored",
        "curation queue item qi-2: agentId 'a/b' is not a valid agent id; ignored",
        "curation queue item qi-3: unknown status 'shipped' (webhouse writes one of: ready,"
        " in_review, approved, published, rejected); ignored",
        "curation queue item qi-4: contentData must be an object, not a string;"
        " it waits until fixed",
        "curation queue item qi-5: rejectionFeedback must be a string, not a number;"
        " it waits until fixed",
        "curation queue item qi-6 appears twice; the first counts",
    ]


def test_the_ledger_says_which_decided_entries_are_recorded_oldest_first() -> None:
    queue = parse_queue(
        js_stringify(
            [entry("qi-3", "published"), entry("qi-2", "rejected"), entry("qi-1", "published")]
        ).encode()
    )
    now = utcnow()
    ledger = [
        new_record("qi-1", "approved", now, random_chars),
        new_record("qi-2", "approved", now, random_chars),
    ]
    # qi-2 was approved, then rejected: a new decision, as a file moved from approved/.
    assert [e.item.item_id for e in to_decide(queue, AGENT, ledger)] == ["qi-2", "qi-3"]
    assert to_decide(queue, "someone-else", []) == []


# --- decisions through the pipeline -------------------------------------------------------------
def test_an_edited_item_published_is_one_approve_commit_with_nested_corrections(
    site: Site, admin: WebhouseAdmin
) -> None:
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"title": "How Generics Save You", "seo": {**ARTICLE["seo"],
               "metaTitle": "Generics, saved | Blog"}})  # fmt: skip
    admin.approve(item)
    webhouse_wrote = site.feedback(AGENT)
    assert [e["field"] for e in webhouse_wrote] == ["title"]  # top-level strings only
    queue_before = queue_bytes(site)

    run_once(site)

    assert decisions(site) == [f"approve({AGENT}): {item}, 2 corrections (title, seo.metaTitle)"]
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["approve"]
    assert trailers["Feedback-Item"] == [item]
    assert trailers["Feedback-Fields"] == ["title, seo.metaTitle"]
    entries = site.feedback(AGENT)
    assert [(e["field"], e["original"], e["corrected"]) for e in entries] == [
        ("title", "Why TypeScript Generics Matter", "How Generics Save You"),
        ("seo.metaTitle", "Generics | Blog", "Generics, saved | Blog"),
    ]
    assert entries[0] == webhouse_wrote[0]  # webhouse's own entry, its id, kept as it was
    assert queue_bytes(site) == queue_before  # never rewritten
    data = "_data/agents/content-writer"
    assert tracked_and_clean(site, QUEUE, f"{data}/feedback.json", f"{data}/prompt/feedback.md")
    assert "Corrected: Generics, saved | Blog" in site.prompt(AGENT)
    assert ledger(site)[0]["item"] == item and ledger(site)[0]["file"] == QUEUE


def test_approved_as_a_draft_is_an_approval(site: Site, admin: WebhouseAdmin) -> None:
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"excerpt": "Generics, shown."})
    admin.approve(item, as_draft=True)
    assert admin.read_queue()[0]["status"] == "in_review"
    run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {item}, 1 correction (excerpt)"]
    assert [e["field"] for e in site.feedback(AGENT)] == ["excerpt"]


def test_a_rejection_keeps_webhouses_entry_and_commits_it(site: Site, admin: WebhouseAdmin) -> None:
    item = admin.generate(AGENT, ARTICLE)
    admin.reject(item, "Tone is too dry — needs more personality")
    webhouse_wrote = site.feedback(AGENT)

    run_once(site)

    assert decisions(site) == [f"reject({AGENT}): {item}"]
    assert site.feedback(AGENT) == webhouse_wrote  # the same (item, type, notes): not twice
    assert "Tone is too dry" in site.git("log", "-1", "--format=%b")
    assert tracked_and_clean(site, "_data/agents/content-writer/feedback.json")


def test_a_rejection_webhouse_did_not_record_is_recorded(site: Site, admin: WebhouseAdmin) -> None:
    # The legacy PATCH action rejects without writing feedback.
    item = admin.generate(AGENT, ARTICLE)
    items = admin.read_queue()
    items[0].update(status="rejected", rejectionFeedback="Off topic.")
    admin.write_queue(items)
    run_once(site)
    assert [(e["type"], e["notes"]) for e in site.feedback(AGENT)] == [("rejection", "Off topic.")]
    assert decisions(site) == [f"reject({AGENT}): {item}"]


def test_each_decision_once_across_reruns_a_purge_and_a_second_machine(
    site: Site, admin: WebhouseAdmin, tmp_path: Path
) -> None:
    approved = admin.generate(AGENT, ARTICLE)
    rejected = admin.generate(AGENT, {**ARTICLE, "title": "Another"})
    waiting = admin.generate(AGENT, {**ARTICLE, "title": "Still a draft"})
    admin.edit(approved, {"title": "Better"})
    admin.approve(approved)
    admin.reject(rejected, "No.")
    run_once(site)
    assert len(decisions(site)) == 2
    commits, entries = site.commit_count(), site.feedback(AGENT)

    run_once(site)  # a restart
    admin.backdate(approved, 40)
    admin.backdate(rejected, 40)
    assert admin.purge(30) == 2
    assert [item["id"] for item in admin.read_queue()] == [waiting]
    run_once(site)  # the purged items are gone from the queue, their decisions stay

    assert site.commit_count() == commits and site.feedback(AGENT) == entries
    assert [(r["item"], r["state"]) for r in ledger(site)] == [
        (approved, "approved"),
        (rejected, "rejected"),
    ]

    # A second machine clones the site, with the queue as committed, and runs feedbackd.
    clone = tmp_path / "clone"
    site.git("clone", "-q", str(site.root), str(clone))
    other = Site(clone)
    before = other.commit_count()
    run_once(other)
    assert other.commit_count() == before


def test_a_rejected_item_approved_later_is_a_new_decision(site: Site, admin: WebhouseAdmin) -> None:
    item = admin.generate(AGENT, ARTICLE)
    admin.reject(item, "Too long.")
    run_once(site)
    admin.edit(item, {"title": "Shorter"})
    admin.approve(item)  # webhouse's approve route takes a rejected item too
    run_once(site)
    run_once(site)
    assert decisions(site) == [
        f"approve({AGENT}): {item}, 1 correction (title)",
        f"reject({AGENT}): {item}",
    ]
    assert [(r["item"], r["state"]) for r in ledger(site)] == [
        (item, "rejected"),
        (item, "approved"),
    ]
    admin.reject(item, "On second thoughts, no.")  # and back again: a third decision
    run_once(site)
    admin.approve(item)
    run_once(site)
    assert [r["state"] for r in ledger(site)] == ["rejected", "approved", "rejected", "approved"]
    assert len(decisions(site)) == 4


def test_an_item_decided_before_feedbackd_was_turned_on_is_decided_once(
    site: Site, admin: WebhouseAdmin
) -> None:
    site.configure("")  # the adapter is off: the queue is not read
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"seo": {**ARTICLE["seo"], "metaDescription": "Why generics matter."}})
    admin.approve(item)
    run_once(site)
    assert decisions(site) == []
    site.configure(WEBHOUSE_CONFIG)
    run_once(site)
    run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {item}, 1 correction (seo.metaDescription)"]


def test_an_item_without_originalcontentdata_is_approved_with_a_warning(
    site: Site, admin: WebhouseAdmin
) -> None:
    item = admin.generate(AGENT, ARTICLE)
    items = admin.read_queue()
    del items[0]["originalContentData"]  # written by a webhouse before it kept originals
    items[0]["status"] = "published"
    admin.write_queue(items)
    output = run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {item}, no corrections"]
    assert f"{QUEUE} item {item}: never seen in queue/ and no originalContentData" in output


def test_a_lost_ledger_is_restored_from_history_not_decided_again(
    site: Site, admin: WebhouseAdmin
) -> None:
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"title": "Better"})
    admin.approve(item)
    run_once(site)
    (site.agent(AGENT) / "decisions.jsonl").unlink()
    run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {item}, 1 correction (title)"]
    assert [(r["item"], r["state"]) for r in ledger(site)] == [(item, "approved")]


def test_an_agent_folder_that_cannot_be_made_holds_up_that_agent_alone(
    site: Site, admin: WebhouseAdmin
) -> None:
    blocked = admin.generate("blocked", ARTICLE)
    fine = admin.generate(AGENT, ARTICLE)
    admin.approve(blocked)
    admin.approve(fine)
    (site.data / "agents" / "blocked").write_text("a file where the folder goes\n")
    output = run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {fine}, no corrections"]
    assert "cannot make the folder of agent blocked" in output


# --- webhouse's feedback.json ---------------------------------------------------------------------
def test_webhouses_feedback_json_is_kept_and_stays_readable_by_webhouse(
    site: Site, admin: WebhouseAdmin
) -> None:
    feedback = admin.feedback_path(AGENT)
    feedback.parent.mkdir(parents=True)
    legacy = [{"original": "Old intro", "corrected": "New intro"}]  # the first loader's shape
    feedback.write_text(js_stringify(legacy))  # no trailing newline, as webhouse writes
    admin.append_feedback(
        AGENT, {"type": "edit", "field": "body", "original": "a", "corrected": "b"}
    )
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"title": "Better", "seo": {**ARTICLE["seo"], "metaTitle": "Better | Blog"}})
    admin.approve(item)
    written_by_webhouse = admin.read_feedback(AGENT)

    run_once(site)

    kept = site.feedback(AGENT)
    assert kept[0]["id"].startswith("legacy-") and kept[0]["type"] == "correction"
    assert kept[1:3] == written_by_webhouse[1:3]  # webhouse's ids and fields, as they were
    assert kept[3]["field"] == "seo.metaTitle"
    read_back = admin.read_feedback(AGENT)  # webhouse's own loader
    assert [e["id"] for e in read_back] == [e["id"] for e in kept]
    assert admin.load_feedback_for_prompt(AGENT) == [
        {"original": "Old intro", "corrected": "New intro"},
        {"original": "a", "corrected": "b"},
        {"original": ARTICLE["title"], "corrected": "Better"},
        {"original": "Generics | Blog", "corrected": "Better | Blog"},
    ]
    # webhouse appends again to what feedbackd wrote; feedbackd reads that too.
    admin.append_feedback(AGENT, {"type": "rejection", "queueItemId": "qi-x", "notes": "No."})
    run_once(site)
    assert len(site.feedback(AGENT)) == 5


# --- a queue being written ------------------------------------------------------------------------
def test_a_half_written_queue_is_waited_for_then_decided(site: Site, admin: WebhouseAdmin) -> None:
    # Fresh writes stay unsettled however slowly the machine runs; saved_long_ago settles them.
    site.configure(WEBHOUSE_CONFIG + "daemon:\n  settle_ms: 20000\n")
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"title": "Better"})
    admin.approve(item)
    whole = queue_bytes(site)
    queue, error_file = site.root / QUEUE, site.root / (QUEUE + ".error")
    queue.write_bytes(whole[: len(whole) // 2])  # webhouse is writing it just now

    report = site.reconcile()
    assert decisions(site) == [] and not error_file.exists()
    assert any(p.path == queue and not p.settled for p in report.problems)

    saved_long_ago(queue)  # webhouse died half-way: after settle_ms it is explained
    site.reconcile()
    assert error_file.read_text().startswith("feedbackd: the JSON ends before it is complete")
    assert queue.read_bytes() == whole[: len(whole) // 2]  # never touched

    queue.write_bytes(whole)  # whole again: a fresh write waits for settle_ms too
    report = site.reconcile()
    assert decisions(site) == [] and any(p.path == queue for p in report.problems)
    saved_long_ago(queue)
    site.reconcile()
    assert decisions(site) == [f"approve({AGENT}): {item}, 1 correction (title)"]
    assert not error_file.exists()


@pytest.mark.parametrize("what", ["a folder", "a link outside the workspace"])
def test_a_queue_file_that_is_not_a_plain_file_is_explained_and_left_alone(
    site: Site, tmp_path: Path, what: str
) -> None:
    queue = site.root / QUEUE
    if what == "a folder":
        queue.mkdir()
    else:
        outside = tmp_path / "outside.json"
        outside.write_text(js_stringify([entry("qi-1", "published")]))
        queue.symlink_to(outside)
        saved_long_ago(outside)
    saved_long_ago(queue)  # it has been so for a while: past daemon.settle_ms
    output = run_once(site)
    assert decisions(site) == []
    assert "the curation queue cannot be read" in output
    error_file = site.root / (QUEUE + ".error")
    assert "the curation queue cannot be read" in error_file.read_text()
    assert queue.is_dir() if what == "a folder" else queue.is_symlink()


def saved_long_ago(path: Path) -> None:
    when = time.time() - 60
    os.utime(path, (when, when))


def test_doctor_names_a_broken_queue_and_entries_it_cannot_use(
    site: Site, admin: WebhouseAdmin
) -> None:
    admin.generate(AGENT, ARTICLE)
    assert site.cli("doctor").returncode == 0
    items = admin.read_queue()
    items[0]["status"] = "shipped"
    admin.write_queue(items)
    done = site.cli("doctor", "--json")
    assert done.returncode == 1
    assert "unknown status 'shipped'" in done.stdout and QUEUE in done.stdout
    (site.root / QUEUE).write_text('[{"id": ')
    done = site.cli("doctor")
    assert done.returncode == 1 and "the JSON ends before it is complete" in done.stdout


# --- the daemon ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_daemon_decides_what_the_curator_does_in_webhouse(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site.configure(WEBHOUSE_CONFIG + "daemon:\n  settle_ms: 300\n")
    admin = WebhouseAdmin(site.root)  # writes happen now, as the daemon watches
    admin.write_queue([])
    daemon = start(site, listener)
    daemon.wait_ready()

    kept = admin.generate(AGENT, ARTICLE)
    dropped = admin.generate(AGENT, {**ARTICLE, "title": "Dull"})
    admin.edit(kept, {"title": "Sharper", "seo": {**ARTICLE["seo"], "metaTitle": "Sharp"}})
    admin.approve(kept)
    admin.reject(dropped, "Too dull.")
    wait_for(lambda: len(decisions(site)) >= 2, what="both decisions")
    idle(daemon, quiet_s=0.5)

    assert sorted(decisions(site)) == [
        f"approve({AGENT}): {kept}, 2 corrections (title, seo.metaTitle)",
        f"reject({AGENT}): {dropped}",
    ]
    identities = [(e["type"], e.get("field"), e.get("notes")) for e in site.feedback(AGENT)]
    assert sorted(identities, key=str) == sorted(
        [("correction", "title", None), ("correction", "seo.metaTitle", None),
         ("rejection", None, "Too dull.")], key=str)  # fmt: skip
    assert admin.read_queue()[0]["id"] == dropped  # the queue is webhouse's alone
    assert tracked_and_clean(site, QUEUE, "_data/agents/content-writer/feedback.json")


@pytest.mark.slow
def test_a_daemon_killed_in_a_burst_of_approvals_records_each_once(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    admin = WebhouseAdmin(site.root, age_s=60)
    names = [admin.generate(AGENT, {**ARTICLE, "title": f"Post {n}"}) for n in range(80)]
    items = admin.read_queue()
    for item in items:  # each one approved with its SEO title corrected (webhouse misses it)
        item["contentData"]["seo"] = {**ARTICLE["seo"], "metaTitle": f"{item['title']}!"}
        item["status"] = "published"
    admin.write_queue(items)

    daemon = start(site, listener)
    wait_for(lambda: len(ledger(site)) >= 20, what="part of the burst")
    daemon.kill_group()
    assert len(ledger(site)) < 80, "the burst was over before the kill; make it larger"

    again = start(site, listener, log_name="restart.log")
    again.wait_ready()
    wait_for(lambda: len(ledger(site)) >= 80, what="the rest of the burst")
    idle(again, quiet_s=0.5)

    assert Counter(str(r["item"]) for r in ledger(site)) == Counter(dict.fromkeys(names, 1))
    entries = Counter(str(e["queueItemId"]) for e in site.feedback(AGENT))
    assert entries == Counter(dict.fromkeys(names, 1))
    assert len(decisions(site)) >= 80 - 1  # an interrupted one may be finished in one commit
    assert not site.git("status", "--porcelain", "_data/agents")


# --- turning it on ------------------------------------------------------------------------------
def feedbackd(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args)


def test_init_webhouse_on_a_webhouse_site_decides_its_queue(tmp_path: Path) -> None:
    root = tmp_path / "site"
    admin = WebhouseAdmin(root, age_s=60)
    item = admin.generate(AGENT, ARTICLE)
    admin.edit(item, {"title": "Better"})
    admin.approve(item)

    done = feedbackd("init", "--webhouse", str(root))
    assert done.returncode == 0, done.stderr
    config = (root / "feedbackd.yaml").read_text()
    assert "webhouse:\n  queue_file: _data/curation-queue.json\n" in config
    assert feedbackd("init", "--webhouse", str(root)).returncode == 0
    assert (root / "feedbackd.yaml").read_text() == config  # once is enough

    site = Site(root)
    run_once(site)
    assert decisions(site) == [f"approve({AGENT}): {item}, 1 correction (title)"]


def test_init_webhouse_keeps_an_existing_configuration(site: Site) -> None:
    site.configure("# our settings\nprompt:\n  show_field: true  # field names help\n")
    WebhouseAdmin(site.root).write_queue([])
    done = site.cli("init", "--webhouse", str(site.root))
    assert done.returncode == 0, done.stderr
    text = (site.root / "feedbackd.yaml").read_text()
    assert text.startswith("# our settings\nprompt:\n  show_field: true  # field names help\n")
    assert site.runtime().settings.webhouse.queue_file == QUEUE
    assert site.runtime().settings.prompt.show_field
    assert not site.git("status", "--porcelain", "feedbackd.yaml")  # committed


def test_init_webhouse_without_a_queue_file_says_where_to_run_it(tmp_path: Path) -> None:
    done = feedbackd("init", "--webhouse", str(tmp_path / "elsewhere"))
    assert done.returncode == 1
    assert "error: workspace_error:" in done.stderr and "curation-queue.json" in done.stderr
    assert not (tmp_path / "elsewhere").exists()  # nothing made


def test_init_webhouse_leaves_a_webhouse_section_it_did_not_write(site: Site) -> None:
    site.configure("webhouse:\n  queue_file: _data/other-queue.json\n")
    WebhouseAdmin(site.root).write_queue([])
    done = site.cli("init", "--webhouse", str(site.root))
    assert done.returncode == 1 and "error: config_error:" in done.stderr
    assert (site.root / "feedbackd.yaml").read_text().endswith("other-queue.json\n")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("../curation-queue.json", "a path inside the workspace"),
        ("/etc/curation-queue.json", "a path inside the workspace"),
        ("site/curation-queue.json", "must lie in the data folder _data/"),
    ],
)
def test_a_queue_file_outside_the_data_folder_is_a_config_error(
    site: Site, value: str, says: str
) -> None:
    site.configure(f"webhouse:\n  queue_file: {value}\n")
    done = site.cli("run", "--once")
    assert done.returncode == 1
    assert "error: config_error:" in done.stderr and says in done.stderr
    assert "feedbackd.yaml, line" in done.stderr
