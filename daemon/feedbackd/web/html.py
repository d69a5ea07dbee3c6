"""The frame every panel page shares, and escaping: every value from a file goes through e()."""

from __future__ import annotations

import html

ICON = "/static/favicon.svg"  # also answered at /favicon.ico, where browsers look by themselves


def e(value: object) -> str:
    """Text from files and commits, made safe to place in HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def facts_line(facts: list[str]) -> str:
    """A card's line of figures, `a · b · c`."""
    return f'<p class="facts">{" · ".join(e(fact) for fact in facts)}</p>'


def page(
    title: str,
    body: str,
    *,
    agent: str | None = None,
    script: bool = True,
    signed_in: str | None = None,
) -> str:
    """A whole page; `script=False` for pages that need no script (the login form, whose
    visitor may not fetch the panel's script before signing in). `signed_in`: the curator the
    token names (http.users_file), who decides as themselves; else an agent's page asks who
    decides."""
    curator = ""
    if signed_in is not None:
        curator = f'<span class="curator signed-in">Signed in as {e(signed_in)}</span>'
    elif agent is not None:
        curator = (
            '<label class="curator">Curator <input id="curator" autocomplete="name"'
            ' placeholder="Name &lt;email&gt;"></label>'
        )
    loads = '<script src="/static/panel.js" defer></script>' if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · feedbackd</title>"
        '<link rel="stylesheet" href="/static/panel.css">'
        f'<link rel="icon" href="{ICON}" type="image/svg+xml">'
        f"{loads}</head>"
        f'<body><header class="top"><a class="brand" href="/">feedbackd</a>{curator}</header>'
        f"<main>{body}</main></body></html>"
    )
