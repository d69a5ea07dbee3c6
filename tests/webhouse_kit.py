"""webhouse CMS's admin app, as far as feedbackd sees it: what its curation actions write to disk.

Each method does what webhouse's own code does (packages/cms-admin/src/lib/curation.ts,
lib/agent-feedback.ts and the routes under app/api/cms/curation/[id]/): the queue file rewritten
in place with JSON.stringify(items, null, 2) (no trailing newline, no lock, no rename), and
feedback.json appended to once per corrected field the same way, after the queue was written.
"""

from __future__ import annotations

import copy
import json
import os
import random
import string
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

QUEUE = "_data/curation-queue.json"


def js_stringify(value: Any) -> str:
    """JSON.stringify(value, null, 2): two-space indent, no trailing newline, text as is."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _js_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short_random() -> str:
    # Math.random().toString(36).slice(2, 8): up to six base-36 characters.
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=6))


class WebhouseAdmin:
    """One webhouse site's admin app, acting on the files under `root`."""

    def __init__(self, root: Path, *, age_s: float = 0) -> None:
        self.root = root
        self.queue_path = root / QUEUE
        # Pretend each write happened this long ago (past daemon.settle_ms); 0: just now.
        self.age_s = age_s

    # --- lib/curation.ts ----------------------------------------------------------------------
    def read_queue(self) -> list[dict[str, Any]]:
        try:
            value = json.loads(self.queue_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return value if isinstance(value, list) else []

    def write_queue(self, items: list[dict[str, Any]]) -> None:
        self.queue_path.parent.mkdir(parents=True, exist_ok=True)
        self.queue_path.write_text(js_stringify(items), encoding="utf-8")
        _age(self.queue_path, self.age_s)

    def generate(self, agent_id: str, content: dict[str, Any], **extra: Any) -> str:
        """addQueueItem: a new item first in the queue, originalContentData a deep copy."""
        items = self.read_queue()
        item_id = f"qi-{int(time.time() * 1000)}-{_short_random()}"
        item = {
            "agentId": agent_id,
            "agentName": agent_id.replace("-", " ").title(),
            "collection": "posts",
            "slug": str(content.get("title", item_id)).lower().replace(" ", "-"),
            "title": content.get("title", ""),
            "status": "ready",
            "contentData": copy.deepcopy(content),
            "originalContentData": copy.deepcopy(content),
            "alternatives": [
                {"model": "claude-haiku", "contentData": {"title": "Alt"}, "score": 61}
            ],
            "seoScore": 72,
            "costUsd": 0.0123,
            "locale": "en",
            **extra,
            "id": item_id,
            "generatedAt": _js_now(),
        }
        items.insert(0, item)
        self.write_queue(items)
        return item_id

    def edit(self, item_id: str, patch: dict[str, Any]) -> None:
        """updateQueueItemData: a shallow merge into contentData (a title also goes on top)."""
        items = self.read_queue()
        item = self._find(items, item_id)
        item["contentData"] = {**item["contentData"], **patch}
        if isinstance(patch.get("title"), str):
            item["title"] = patch["title"]
        self.write_queue(items)

    def approve(self, item_id: str, *, as_draft: bool = False) -> None:
        """The approve route: status published (in_review as a draft), then one correction
        entry per top-level string field that differs from originalContentData."""
        items = self.read_queue()
        item = self._find(items, item_id)
        item["status"] = "in_review" if as_draft else "published"
        self.write_queue(items)
        original, corrected = item.get("originalContentData"), item["contentData"]
        if original is None:
            return
        for field in dict.fromkeys([*original, *corrected]):
            before, after = original.get(field), corrected.get(field)
            if isinstance(before, str) and isinstance(after, str) and before != after:
                entry = {"type": "correction", "queueItemId": item_id, "field": field,
                         "original": before, "corrected": after}  # fmt: skip
                self.append_feedback(item["agentId"], entry)

    def reject(self, item_id: str, feedback: str) -> None:
        """The reject route: status rejected with rejectionFeedback, then a rejection entry."""
        items = self.read_queue()
        item = self._find(items, item_id)
        item["status"] = "rejected"
        item["rejectionFeedback"] = feedback
        self.write_queue(items)
        entry = {"type": "rejection", "queueItemId": item_id, "notes": feedback}
        self.append_feedback(item["agentId"], entry)

    def purge(self, retention_days: float) -> int:
        """purgeExpiredQueueItems: decided items generated before the retention period go."""
        items = self.read_queue()
        cutoff = datetime.now(UTC) - timedelta(days=retention_days)
        keep = [
            item
            for item in items
            if item["status"] not in ("approved", "published", "rejected")
            or datetime.fromisoformat(item["generatedAt"].replace("Z", "+00:00")) >= cutoff
        ]
        if len(keep) != len(items):
            self.write_queue(keep)
        return len(items) - len(keep)

    def backdate(self, item_id: str, days: float) -> None:
        """Make an item look generated `days` ago (to reach the retention period)."""
        items = self.read_queue()
        when = datetime.now(UTC) - timedelta(days=days)
        self._find(items, item_id)["generatedAt"] = when.isoformat(timespec="milliseconds")
        self.write_queue(items)

    @staticmethod
    def _find(items: list[dict[str, Any]], item_id: str) -> dict[str, Any]:
        for item in items:
            if item["id"] == item_id:
                return item
        raise KeyError(item_id)

    # --- lib/agent-feedback.ts ----------------------------------------------------------------
    def feedback_path(self, agent_id: str) -> Path:
        return self.root / "_data" / "agents" / agent_id / "feedback.json"

    def read_feedback(self, agent_id: str) -> list[dict[str, Any]]:
        """readFeedback: legacy entries (no type or no id) get `legacy-{index}` ids."""
        try:
            data = json.loads(self.feedback_path(agent_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(data, list):
            return []
        return [
            entry
            if isinstance(entry, dict) and "type" in entry and "id" in entry
            else {
                "id": f"legacy-{index}",
                "type": "correction",
                "original": entry.get("original") if isinstance(entry, dict) else None,
                "corrected": entry.get("corrected") if isinstance(entry, dict) else None,
                "createdAt": "1970-01-01T00:00:00.000Z",
            }
            for index, entry in enumerate(data)
        ]

    def append_feedback(self, agent_id: str, entry: dict[str, Any]) -> dict[str, Any]:
        existing = self.read_feedback(agent_id)
        full = {
            **entry,
            "id": f"fb-{int(time.time() * 1000)}-{_short_random()}",
            "createdAt": _js_now(),
        }
        path = self.feedback_path(agent_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(js_stringify([*existing, full][-200:]), encoding="utf-8")
        _age(path, self.age_s)
        return full

    def load_feedback_for_prompt(self, agent_id: str, limit: int = 5) -> list[dict[str, str]]:
        """loadFeedbackForPrompt: the last corrections and edits with both sides non-empty."""
        examples = [
            {"original": e["original"], "corrected": e["corrected"]}
            for e in self.read_feedback(agent_id)
            if e.get("type") in ("correction", "edit") and e.get("original") and e.get("corrected")
        ]
        return examples[-limit:]


def _age(path: Path, seconds: float) -> None:
    """Pretend the write happened `seconds` ago (past daemon.settle_ms when that is large)."""
    if seconds:
        when = time.time() - seconds
        os.utime(path, (when, when))
