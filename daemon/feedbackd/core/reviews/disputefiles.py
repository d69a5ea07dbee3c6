"""A disputed draft's file (SPEC section 15): the draft as first drafted, with a top-level
`reviews` key listing each curator's verdict, version and notes; the check that a file moved
out of disputed/ to settle the dispute no longer holds that key; and the decided file of
reviews that agree without a move to make it (the last came from another clone).

Pure: bytes in, bytes out. JSON is written out with 2-space indentation; YAML and Markdown
front matter get the key appended as a block, so the draft's own lines stay as they were.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from feedbackd.core.curation.itemedits import with_rejection_feedback
from feedbackd.core.curation.items import (
    MD_RESERVED_KEYS,
    Item,
    ItemError,
    decode_text,
    parse_item,
    split_front_matter,
)
from feedbackd.core.formats import yamlio
from feedbackd.core.formats.jsontext import dumps_json
from feedbackd.core.reviews.reviewplan import REVIEWS_KEY


def with_reviews(first_draft: bytes, path: Path, reviews: list[dict[str, Any]]) -> str:
    """The disputed file's text: `first_draft` (an item file named like `path`) with its
    `reviews` key set to `reviews`."""
    item = parse_item(first_draft, path.suffix, path.stem, path)
    if item.format == "json":
        return dumps_json({**item.document, REVIEWS_KEY: reviews})
    block = yamlio.dump({REVIEWS_KEY: reviews})
    text = decode_text(first_draft)
    if item.format == "yaml":
        return _joined(text, block)
    bounds = split_front_matter(text)
    front = _joined(text[bounds.start : bounds.end], block)
    return text[: bounds.start] + front + text[bounds.end :]


def _joined(text: str, block: str) -> str:
    return text + ("" if not text or text.endswith("\n") else "\n") + block


def without_reviews(data: bytes, path: Path) -> bytes:
    """A disputed file (`path` names its format) with its `reviews` key dropped, the rest as
    it stands: what a curator who settles the dispute with a command or the panel starts from.
    ItemError when the key is not the block `with_reviews` wrote (edited by hand): the curator
    then drops it by hand."""
    item = parse_item(data, path.suffix, path.stem, path)
    if REVIEWS_KEY not in item.document:
        return data
    if item.format == "json":
        kept = {key: value for key, value in item.document.items() if key != REVIEWS_KEY}
        return dumps_json(kept).encode("utf-8")
    block = yamlio.dump({REVIEWS_KEY: item.document[REVIEWS_KEY]})
    text = decode_text(data)
    if item.format == "yaml":
        return _cut(text, len(text), block).encode("utf-8")
    bounds = split_front_matter(text)
    return _cut(text, bounds.end, block).encode("utf-8")


def _cut(text: str, end: int, block: str) -> str:
    """`text` without the `block` that ends at `end`."""
    if not text[:end].endswith(block):
        raise ItemError(
            f"the `{REVIEWS_KEY}` key of the disputed file was changed by hand",
            hint="delete the reviews key in the file yourself, then move it to approved/ or"
            " rejected/",
        )
    return text[: end - len(block)] + text[end:]


def reviews_left(item: Item) -> ItemError | None:
    """The error of a file moved out of disputed/ that still holds the `reviews` key: the
    curator who settles a dispute drops it, so no decision records the others' versions as
    the adjudicator's."""
    if REVIEWS_KEY not in item.document:
        return None
    return ItemError(
        f"{item.item_id} still holds the `reviews` key of its dispute",
        hint="delete the reviews key (keep the version you decide on), then move the file again",
    )


def agreed_text(first_draft: bytes, path: Path, content: dict[str, Any] | None, notes: str) -> str:
    """The decided file of reviews that agree, for `path` in approved/ or rejected/: the draft
    as first drafted with the agreed `content` (an approval), or with `notes` as its
    rejectionFeedback (a rejection: `content` None)."""
    if content is None:
        return decode_text(with_rejection_feedback(first_draft, path, notes))
    item = parse_item(first_draft, path.suffix, path.stem, path)
    if item.format == "json":
        return dumps_json({**item.document, "contentData": content})
    if item.format == "yaml":
        return yamlio.dump({**item.document, "contentData": copy.deepcopy(content)})
    text = decode_text(first_draft)
    bounds = split_front_matter(text)
    kept = {key: value for key, value in item.document.items() if key in MD_RESERVED_KEYS}
    front = {**kept, **{key: value for key, value in content.items() if key != "body"}}
    body = content.get("body", "")
    return text[: bounds.start] + yamlio.dump(front) + text[bounds.end : bounds.body] + str(body)


# What a curator adds to a draft when they review it, besides their edits of the content.
_REVIEWERS_KEYS = ("curator", "rejectionFeedback")


def as_first_drafted(moved: bytes, path: Path) -> bytes:
    """A draft that feedbackd knows only as a curator moved it (no commit or snapshot of it in
    queue/), made as near to its first draft as the file tells: without the curator's name
    and note, and with `originalContentData` as its content where it has one, so that the
    next curator reviews it without the first one's edits. Unreadable: as it is."""
    try:
        item = parse_item(moved, path.suffix, path.stem, path)
    except ItemError:
        return moved
    kept = {k: v for k, v in item.document.items() if k not in _REVIEWERS_KEYS}
    if item.format == "md":
        text = decode_text(moved)
        bounds = split_front_matter(text)
        front = yamlio.dump({k: v for k, v in kept.items() if k != "body"})
        return (text[: bounds.start] + front + text[bounds.end :]).encode("utf-8")
    if item.original is not None:  # a copy: YAML would write one object twice as an alias
        kept["contentData"] = copy.deepcopy(item.original)
    dump = dumps_json if item.format == "json" else yamlio.dump
    return dump(kept).encode("utf-8")
