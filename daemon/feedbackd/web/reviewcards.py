"""What the agent page shows of reviews by several curators (SPEC section 15): the round of a
draft held in review/ ("review 2 of 2"), a disputed draft with each curator's version side by
side (an Approve-this-version button under each approving one, Reject-with-note under all),
and the curators' agreement card, from the figures `GET /api/agreement` answers.

A version's button carries the version's edits as a data attribute; panel.js sends them as the
approval's `edits`, as a script would.
"""

from __future__ import annotations

import json
from typing import Any

from feedbackd.core.people import display_name
from feedbackd.core.wording import counted
from feedbackd.web.html import e, facts_line

KAPPA_PAIRS = 6  # the pairs of curators the card lists, those with most items in common first


def review_round(draft: dict[str, Any]) -> str:
    """`Review 2 of 2` over a draft in review/: how many reviewed it, never who or how (the
    next curator decides blind)."""
    held = draft.get("review")
    if not held:
        return ""
    return (
        f'<p class="round">Review {held["done"] + 1} of {held["of"]}'
        '<span class="hint-line"> · shown as first drafted</span></p>'
    )


def disputed_draft(agent_id: str, draft: dict[str, Any], head: str) -> str:
    """A disputed draft: the drafted text of each field a version changed, beside each
    curator's version (their changed fields, or their note), and the ways to settle it."""
    versions = draft.get("versions") or []
    drafted = {field["field"]: field["current"] for field in draft["fields"]}
    changed = list(dict.fromkeys(f for v in versions for f in v.get("edits", {})))
    columns = [_drafted_column(drafted, changed)]
    columns += [_version_column(version, drafted) for version in versions]
    approvals = sum(v["verdict"] == "approve" for v in versions)
    split = f"approve {approvals}, reject {len(versions) - approvals}"
    return (
        f'<article class="draft disputed" data-agent="{e(agent_id)}" data-item="{e(draft["id"])}">'
        f'{head}<p class="round">Disputed ({e(split)}): choose a version, or reject it</p>'
        f'<div class="versions">{"".join(columns)}</div>'
        '<div class="decide"><label class="note">Note for the agent <textarea rows="2" '
        'placeholder="Why is it rejected?"></textarea></label>'
        '<button type="button" class="reject">Reject with note</button></div>'
        '<p class="result" role="status"></p></article>'
    )


def _drafted_column(drafted: dict[str, str], changed: list[str]) -> str:
    rows = "".join(_field(name, drafted.get(name), None) for name in changed)
    body = f"<dl>{rows}</dl>" if rows else '<p class="same">no field changed by anyone</p>'
    return f'<section class="version drafted"><h4>As drafted</h4>{body}</section>'


def _version_column(version: dict[str, Any], drafted: dict[str, str]) -> str:
    who = display_name(version["curator"])
    if version["verdict"] == "reject":
        return (
            f'<section class="version rejects"><h4>{e(who)} <span class="verdict">rejects'
            f'</span></h4><p class="notes">{e(version.get("notes") or "(no note)")}</p></section>'
        )
    edits: dict[str, str] = version.get("edits") or {}
    rows = "".join(_field(name, drafted.get(name), value) for name, value in edits.items())
    body = f"<dl>{rows}</dl>" if rows else '<p class="same">approves it as drafted</p>'
    data = e(json.dumps(edits, ensure_ascii=False))
    return (
        f'<section class="version approves"><h4>{e(who)} <span class="verdict">approves'
        f"</span></h4>{body}"
        f'<button type="button" class="approve-version" data-edits="{data}"'
        f' aria-label="Approve this version ({e(who)}&#39;s)">Approve this version</button>'
        "</section>"
    )


def _field(name: str, drafted: str | None, value: str | None) -> str:
    shown = drafted if value is None else value
    mark = "span" if value is None else "ins"
    text = "—" if shown is None else shown
    return f"<dt><code>{e(name)}</code></dt><dd><{mark}>{e(text)}</{mark}></dd>"


# --- agreement ----------------------------------------------------------------------------------
def agreement_card(figures: dict[str, Any] | None) -> str:
    """How far the curators agree on this agent's drafts; nothing while no draft has had two
    reviews (an agent one curator decides shows no such card)."""
    if figures is None:
        return ""
    if "problem" in figures:
        return _card(f'<p class="problem">{e(figures["problem"])}</p>')
    if not figures["items"]:
        return ""
    return _card(f"{_facts(figures)}{_pairs(figures['kappa'])}{_curators(figures['curators'])}")


def _card(body: str) -> str:
    return (
        '<section class="card agreement"><h2>Curator agreement</h2>'
        '<p class="hint">over the drafts two or more curators reviewed, from what HEAD holds'
        f" (<code>feedbackd agreement</code>)</p>{body}</section>"
    )


def _facts(figures: dict[str, Any]) -> str:
    facts = [
        counted(figures["items"], "item"),
        f"{figures['agreed']} agreed",
        f"{figures['disputed']} disputed ({figures['resolved']} resolved)",
        f"verdicts agree on {_percent(figures['verdict_agreement'])}",
        f"Krippendorff's α {_number(figures['alpha'])}",
    ]
    return facts_line(facts)


def _pairs(pairs: list[dict[str, Any]]) -> str:
    if not pairs:
        return (
            '<p class="hint-line">Cohen\'s κ needs a pair of curators with 10 items in common.</p>'
        )
    shown = sorted(pairs, key=lambda p: -p["items"])[:KAPPA_PAIRS]
    rows = "".join(
        f"<tr><td>{e(display_name(p['a']))} · {e(display_name(p['b']))}</td>"
        f'<td class="n">{p["items"]}</td><td class="n">{_number(p["kappa"])}</td></tr>'
        for p in shown
    )
    return (
        '<table class="kappa"><thead><tr><th>pair</th><th>items</th><th>Cohen\'s κ</th></tr>'
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _curators(curators: list[dict[str, Any]]) -> str:
    rows = "".join(
        f'<tr><td>{e(display_name(c["curator"]))}</td><td class="n">{c["reviews"]}</td>'
        f'<td class="n">{_percent(c["agreement"])}</td></tr>'
        for c in curators
    )
    return (
        '<table class="curators"><thead><tr><th>curator</th><th>reviews</th>'
        f"<th>with the decision</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share * 100:.0f} %"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
