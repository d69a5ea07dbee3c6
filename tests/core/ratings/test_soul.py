"""SOUL.md reading and surgical edits: odd files, bad input, and byte-for-byte preservation."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedbackd.core.errors import InvalidItem, NotFound
from feedbackd.core.ratings.soul import (
    DEFAULT_PRICE,
    MAX_SOUL_CHARS,
    Skill,
    format_price,
    parse_soul,
    set_description,
    set_price,
    skill_id_for,
)

SAMPLE = """\
# Content Writer

Writes blog posts
for developers.

## Blog Post

Drafts a long-form post
from an outline.
pricing: 25

- up to 2,000 words

## Café Menü — Pro!
Designs menus.

### Examples

```markdown
pricing: 5
## Not A Skill
```

## Code Run
pricing: 12.50  \n\
Runs code in a sandbox.
"""


def lines_of(text: str) -> list[str]:
    return re.split(r"\r?\n", text)


# ---------------------------------------------------------------------------------------------
# Reading


def test_reads_name_description_and_skills() -> None:
    soul = parse_soul(SAMPLE)
    assert soul.name == "Content Writer"
    assert soul.description == "Writes blog posts for developers."
    assert [s.skill_id for s in soul.skills] == ["blog-post", "caf-men--pro", "code-run"]
    assert soul.skill("blog-post") == Skill(
        skill_id="blog-post",
        name="Blog Post",
        price=25.0,
        price_explicit=True,
        description="Drafts a long-form post from an outline.",
        heading_line=5,
        pricing_line=9,
    )


def test_a_skill_without_pricing_line_costs_the_default_price() -> None:
    menu = parse_soul(SAMPLE).skill("caf-men--pro")
    assert menu is not None
    assert (menu.price, menu.price_explicit, menu.pricing_line) == (DEFAULT_PRICE, False, None)
    assert DEFAULT_PRICE == 10.0
    assert menu.name == "Café Menü — Pro!"
    assert menu.description == "Designs menus."


def test_pricing_with_decimals_and_trailing_spaces_and_description_after_it() -> None:
    run = parse_soul(SAMPLE).skill("code-run")
    assert run is not None
    assert run.price == 12.5
    assert run.pricing_line == 24
    assert run.description == "Runs code in a sandbox."


def test_unknown_skill_lookup_is_none() -> None:
    assert parse_soul(SAMPLE).skill("nope") is None


@pytest.mark.parametrize(
    ("heading", "skill_id"),
    [
        ("Code Run", "code-run"),
        ("code run!", "code-run"),
        ("Café Menü — Pro!", "caf-men--pro"),
        ("C# Helper", "c-helper"),
        ("SEO  Audit", "seo--audit"),
        ("Step 2: Review", "step-2-review"),
        ("already-kebab", "already-kebab"),
    ],
)
def test_skill_ids(heading: str, skill_id: str) -> None:
    assert skill_id_for(heading) == skill_id
    soul = parse_soul(f"## {heading}\n")
    assert [s.skill_id for s in soul.skills] == [skill_id]


def test_heading_forms() -> None:
    text = "## Translate ##\n##NotAHeading\n    ## indented code\n #### deep\n## Second\n"
    soul = parse_soul(text)
    assert [(s.name, s.heading_line) for s in soul.skills] == [("Translate", 0), ("Second", 4)]
    assert soul.skills[0].description == "##NotAHeading ## indented code"


def test_sub_headings_stay_inside_their_section() -> None:
    text = "## Audit\nChecks sites.\n\n### Pricing notes\nDepends.\npricing: 7\n## Next\n"
    audit = parse_soul(text).skill("audit")
    assert audit is not None
    assert (audit.price, audit.pricing_line) == (7.0, 5)


def test_code_fences_hold_no_headings_and_no_prices() -> None:
    text = (
        "## Shell\n"
        "~~~~\n"
        "pricing: 5\n"
        "```\n"
        "## Fake\n"
        "~~~~\n"
        "```` ```\n"  # a backtick fence whose info string has backticks is not a fence
        "````\n"
        "pricing: 1\n"
        "## Nope\n"
        "`````\n"
    )
    soul = parse_soul(text)
    assert [s.skill_id for s in soul.skills] == ["shell"]
    shell = soul.skills[0]
    # Had "```` ```" opened a fence, "````" would close it and "pricing: 1" would be a price.
    assert (shell.price, shell.price_explicit) == (DEFAULT_PRICE, False)
    assert shell.description == ""  # a code block, not a paragraph, follows the heading


def test_front_matter_is_not_a_name_or_description() -> None:
    text = "---\n# comment: yes\npricing: 3\n---\nA helpful agent.\n\n## One\n"
    soul = parse_soul(text)
    assert soul.name is None
    assert soul.description == "A helpful agent."
    assert soul.skills[0].price == DEFAULT_PRICE


def test_an_h1_ends_a_skill_section() -> None:
    text = "# Bot\n## One\npricing: 2\n# Appendix\npricing: 99\n"
    soul = parse_soul(text)
    assert soul.name == "Bot"
    assert soul.skills[0].price == 2.0


def test_empty_and_headless_files() -> None:
    assert parse_soul("") == parse_soul("\n\n") == parse_soul("  \n")
    assert parse_soul("").skills == ()
    soul = parse_soul("Just words\nhere")
    assert (soul.name, soul.description) == (None, "Just words here")


def test_crlf_files_read_without_carriage_returns() -> None:
    soul = parse_soul(SAMPLE.replace("\n", "\r\n"))
    assert soul == parse_soul(SAMPLE)


def test_a_list_right_after_the_heading_means_no_description() -> None:
    skill = parse_soul("## Lists\n\n- one\n- two\nLater text.\n").skills[0]
    assert skill.description == ""


# ---------------------------------------------------------------------------------------------
# Refusals


@pytest.mark.parametrize(
    "line", ["pricing: abc", "pricing: -5", "pricing: 12 credits", "pricing:", "pricing: 1e3"]
)
def test_malformed_pricing_line_is_an_error_naming_the_line(line: str) -> None:
    with pytest.raises(InvalidItem, match=r"^line 3: .* is not a price") as caught:
        parse_soul(f"## Skill\nText.\n{line}\n")
    assert caught.value.code == "invalid_item"
    assert "non-negative number" in caught.value.hint


def test_a_huge_number_is_not_a_price() -> None:
    with pytest.raises(InvalidItem, match="line 2"):
        parse_soul("## Skill\npricing: " + "9" * 400 + "\n")


def test_two_pricing_lines_in_one_section() -> None:
    with pytest.raises(InvalidItem, match=r"lines 2 and 4: .*more than one"):
        parse_soul("## Skill\npricing: 1\n### More\npricing: 2\n")


def test_two_skills_with_the_same_id() -> None:
    text = "# Bot\n\nIntro.\n\n## Code Run\nRuns.\n\n\n\n\n\n## code run!\nAlso runs.\n"
    with pytest.raises(InvalidItem) as caught:
        parse_soul(text)
    message = caught.value.message
    assert message.startswith("line 12:")
    assert '"code-run"' in message and "line 5" in message
    assert "rename" in caught.value.hint


@pytest.mark.parametrize("heading", ["## !!!", "##", "## — Pro", "## " + "x" * 129])
def test_headings_that_give_no_usable_id(heading: str) -> None:
    with pytest.raises(InvalidItem, match=r"^line 2: the skill heading"):
        parse_soul(f"# Bot\n{heading}\n")


def test_oversized_text() -> None:
    with pytest.raises(InvalidItem, match="limit"):
        parse_soul("x" * (MAX_SOUL_CHARS + 1))


def test_unknown_skill_is_not_found() -> None:
    with pytest.raises(NotFound, match=r'no skill "ghost".*blog-post') as caught:
        set_price(SAMPLE, "ghost", 5)
    assert caught.value.code == "not_found"
    with pytest.raises(NotFound):
        set_description(SAMPLE, "ghost", "Boo.")


def test_edits_refuse_an_unreadable_file() -> None:
    with pytest.raises(InvalidItem, match="line 2"):
        set_price("## A\npricing: x\n", "a", 5)


# ---------------------------------------------------------------------------------------------
# Prices


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (19, "19"),
        (19.0, "19"),
        (9.5, "9.5"),
        (9.45, "9.45"),
        (9.445, "9.45"),
        (9.444, "9.44"),
        (0, "0"),
        (0.001, "0"),
        (0.005, "0.01"),
        (23.75 * 0.95, "22.56"),
        (1e20, "100000000000000000000"),
    ],
)
def test_format_price(value: float, text: str) -> None:
    assert format_price(value) == text


@pytest.mark.parametrize("value", [-1, -0.01, float("nan"), float("inf"), True, "5", 10**400])
def test_format_price_refuses_non_prices(value: object) -> None:
    with pytest.raises(InvalidItem, match="price must be"):
        format_price(value)  # type: ignore[arg-type]


def test_set_price_changes_only_the_number() -> None:
    result = set_price(SAMPLE, "code-run", 11.875)
    assert result == SAMPLE.replace("pricing: 12.50  \n", "pricing: 11.88  \n")
    assert parse_soul(result).skill("code-run").price == 11.88  # type: ignore[union-attr]


def test_set_price_keeps_odd_spacing() -> None:
    assert set_price("## A\npricing:7\t\n", "a", 6.5) == "## A\npricing:6.5\t\n"
    assert set_price("## A\npricing:   7", "a", 8) == "## A\npricing:   8"


def test_set_price_adds_a_line_at_the_end_of_a_middle_section() -> None:
    result = set_price(SAMPLE, "caf-men--pro", 9.5)
    assert result == SAMPLE.replace("```\n\n## Code Run", "```\npricing: 9.5\n\n## Code Run")
    soul = parse_soul(result)
    menu = soul.skill("caf-men--pro")
    assert menu is not None and (menu.price, menu.price_explicit) == (9.5, True)
    old_run = parse_soul(SAMPLE).skill("code-run")
    assert old_run is not None
    assert soul.skill("code-run") == replace(old_run, heading_line=24, pricing_line=25)


def test_the_fenced_pricing_line_is_never_edited() -> None:
    result = set_price(SAMPLE, "caf-men--pro", 4)
    assert "```markdown\npricing: 5\n## Not A Skill\n```\npricing: 4\n" in result


def test_set_price_adds_a_line_to_the_last_section_before_trailing_blank_lines() -> None:
    text = "# Bot\n## Only\nDoes things.\n\n- a list\n\n\n"
    assert (
        set_price(text, "only", 19) == "# Bot\n## Only\nDoes things.\n\n- a list\npricing: 19\n\n\n"
    )


def test_set_price_on_a_file_without_a_trailing_newline() -> None:
    assert set_price("## A\nText.", "a", 3) == "## A\nText.\npricing: 3"
    assert set_price("## A\r\nText.", "a", 3) == "## A\r\nText.\r\npricing: 3"
    assert set_price("## A", "a", 3) == "## A\npricing: 3"
    assert set_price("## A\npricing: 9", "a", 3) == "## A\npricing: 3"


def test_crlf_files_stay_crlf() -> None:
    crlf = SAMPLE.replace("\n", "\r\n")
    added = set_price(crlf, "blog-post", 20)
    assert added == crlf.replace("pricing: 25\r\n", "pricing: 20\r\n")
    inserted = set_price(crlf, "caf-men--pro", 8)
    assert inserted == crlf.replace("```\r\n\r\n## Code", "```\r\npricing: 8\r\n\r\n## Code")
    assert "\n" not in inserted.replace("\r\n", "")


def test_set_price_refuses_to_add_inside_an_unclosed_code_block() -> None:
    text = "## A\nText.\n```\nnever closed\n"
    assert parse_soul(text).skills[0].price == DEFAULT_PRICE
    with pytest.raises(InvalidItem, match="line 3: this code block is never closed"):
        set_price(text, "a", 4)


def test_set_price_refuses_bad_prices_without_touching_anything() -> None:
    with pytest.raises(InvalidItem):
        set_price(SAMPLE, "blog-post", -1)


# ---------------------------------------------------------------------------------------------
# Descriptions


def test_set_description_replaces_the_whole_paragraph() -> None:
    result = set_description(SAMPLE, "blog-post", "Writes  posts\nthat rank.")
    expected = SAMPLE.replace(
        "Drafts a long-form post\nfrom an outline.\n", "Writes posts that rank.\n"
    )
    assert result == expected
    assert parse_soul(result).skill("blog-post").description == "Writes posts that rank."  # type: ignore[union-attr]


def test_set_description_after_a_pricing_line_and_at_end_of_file() -> None:
    text = "## Run\r\npricing: 3\r\nOld words."
    assert set_description(text, "run", "New words.") == "## Run\r\npricing: 3\r\nNew words."


def test_set_description_inserts_one_right_after_the_heading() -> None:
    text = "## Lists\n\n- one\n## Next\n"
    result = set_description(text, "lists", "Makes lists.")
    assert result == "## Lists\nMakes lists.\n\n- one\n## Next\n"
    assert set_description("## Bare", "bare", "Words.") == "## Bare\nWords."
    sub = set_description("## A\n### Sub\ntext\n", "a", "Top.")
    assert parse_soul(sub).skills[0].description == "Top."


def test_set_description_keeps_other_skills_as_they_were() -> None:
    before = parse_soul(SAMPLE)
    after = parse_soul(set_description(SAMPLE, "caf-men--pro", "Designs menus in any language."))
    assert after.skill("blog-post") == before.skill("blog-post")
    assert after.skill("code-run") == before.skill("code-run")


@pytest.mark.parametrize(
    ("description", "reason"),
    [
        ("", "empty"),
        (" \n\t", "empty"),
        ("- a list", "start like"),
        ("## heading", "start like"),
        ("# heading", "start like"),
        ("pricing: 3", "start like"),
        ("```python", "start like"),
        ("~~~", "start like"),
        ("> quote", "start like"),
        ("1. first", "start like"),
        ("---", "start like"),
        ("bell\x07", "control characters"),
        ("x" * 2001, "limit"),
    ],
)
def test_set_description_refuses_what_would_not_read_back(description: str, reason: str) -> None:
    with pytest.raises(InvalidItem, match=reason):
        set_description(SAMPLE, "blog-post", description)


# ---------------------------------------------------------------------------------------------
# Property: set_price changes one line or inserts one line, nothing else


WORDS = ["Code Run", "Café Menü — Pro!", "SEO audit", "C# Helper", "ÜBER translate", "x"]
BODY_BLOCKS = [
    ["Does a useful thing."],
    ["Two lines", "of description."],
    [""],
    ["", ""],
    ["- a list item", "- another"],
    ["### Sub-heading", "Sub text."],
    ["```", "pricing: 5", "## Fenced", "```"],
    ["~~~text", "pricing: abc", "~~~"],
    ["> a quote"],
]
PRICE_LINES = ["pricing: 12", "pricing: 12.50  ", "pricing:7", "pricing: 0", "pricing: 3.25\t"]


@st.composite
def soul_files(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A random SOUL.md text and its skill ids; endings and the final newline vary."""
    lines = draw(st.sampled_from([["# Bot", "Intro.", ""], [], ["Intro only."]]))
    ids = []
    for index in range(draw(st.integers(1, 5))):
        name = f"{draw(st.sampled_from(WORDS))} {index}"
        ids.append(skill_id_for(name))
        body = [line for block in draw(st.lists(st.sampled_from(BODY_BLOCKS))) for line in block]
        price = draw(st.none() | st.sampled_from(PRICE_LINES))
        if price is not None:
            body.insert(draw(st.integers(0, len(body))), price)
        lines += [f"## {name}", *body]
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines) + draw(st.sampled_from(["", eol, eol + eol]))
    return text, ids


@settings(max_examples=300, deadline=None)
@given(soul_files(), st.data(), st.floats(0, 1e6, allow_nan=False))
def test_set_price_touches_exactly_one_line(
    document: tuple[str, list[str]], data: st.DataObject, price: float
) -> None:
    text, ids = document
    skill_id = data.draw(st.sampled_from(ids))
    before = parse_soul(text)
    result = set_price(text, skill_id, price)
    old, new = lines_of(text), lines_of(result)
    value = format_price(price)
    skill = before.skill(skill_id)
    assert skill is not None
    if skill.pricing_line is not None:
        assert len(new) == len(old)
        changed = [i for i in range(len(old)) if old[i] != new[i]]
        assert changed in ([], [skill.pricing_line])
        assert new[skill.pricing_line].split(":", 1)[1].strip() == value
    else:
        assert len(new) == len(old) + 1
        at = next((i for i in range(len(old)) if old[i] != new[i]), len(old))
        assert new[at] == f"pricing: {value}"
        assert new[:at] + new[at + 1 :] == old
        # Right after the section's last non-blank line, before the next skill's heading.
        assert new[at - 1].strip() and at > skill.heading_line
        later = [s.heading_line for s in before.skills if s.heading_line > skill.heading_line]
        assert all(not line.strip() for line in old[at : min(later, default=len(old))])
    if "\r\n" in text:
        assert "\n" not in result.replace("\r\n", "")
    after = parse_soul(result)
    assert after.skill(skill_id).price == float(value)  # type: ignore[union-attr]
    for old_skill, new_skill in zip(before.skills, after.skills, strict=True):
        assert old_skill.description == new_skill.description
        if old_skill.skill_id != skill_id:
            assert old_skill.price == new_skill.price


@settings(max_examples=150, deadline=None)
@given(soul_files(), st.data())
def test_set_description_reads_back_and_keeps_everything_else(
    document: tuple[str, list[str]], data: st.DataObject
) -> None:
    text, ids = document
    skill_id = data.draw(st.sampled_from(ids))
    before = parse_soul(text)
    after = parse_soul(set_description(text, skill_id, "Fresh  description\nof the skill."))
    assert skill_id in [skill.skill_id for skill in before.skills]
    for old_skill, new_skill in zip(before.skills, after.skills, strict=True):
        if old_skill.skill_id == skill_id:
            assert new_skill.description == "Fresh description of the skill."
            assert new_skill.price == old_skill.price
        else:
            assert (new_skill.description, new_skill.price) == (
                old_skill.description,
                old_skill.price,
            )
