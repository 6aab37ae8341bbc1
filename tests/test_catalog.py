"""The requirement catalog: it loads, its rows keep the catalog's rules, and it covers the seeds."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from pydantic import ValidationError

from conformance.catalog import requirements as catalog_mod
from conformance.boundary.adapter import CAPABILITIES
from conformance.catalog.requirements import (
    CATALOG_PATH,
    Catalog,
    CatalogError,
    UnknownRequirement,
    load_catalog,
    parse_catalog,
)
from conformance.boundary.messages import AssistantMessage, ToolResultMessage, UserMessage, parse_message

SEED_000 = "000_84ba9c140ddd50a2.txt"
SEED_001 = "001_e4c58649039f32c5.txt"
SEED_003 = "003_e9db79d6abeb7c7a.txt"

#: Section headings of 003 that contain MUST, SHOULD or MAY: each needs a row citing it.
NORMATIVE_SECTIONS_003 = (
    "The RunTurn algorithm",
    "Turn-level tool-call concurrency",
    "Independent bound dimensions",
    "Cost accounting",
    "Limit-reached behavior",
    "Done detection",
    "Doom-loop detection",
)

#: Sections of 000 and 001 that state rules (000's "Statuses" is cut off in the seed: no rows).
RULE_SECTIONS = {
    SEED_000: ("The Turn Loop", "Step by step", "Each tool call", "Stopping a turn", "The budget"),
    SEED_001: (
        "TurnInfo",
        "Sessions",
        "Messages",
        "Tags",
        "Where tags come from",
        "Child turns",
        "The journal",
    ),
    SEED_003: NORMATIVE_SECTIONS_003,
}

AREAS = {
    "LOOP", "SPAN", "CONC", "GATE", "BOUND", "COST", "DONE", "DOOM", "TURN", "TOOL", "STOP",
    "BUDGET", "IDENT", "SESS", "MSG", "TAG", "CHILD", "JOURNAL",
}  # fmt: skip


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_catalog_loads_and_is_cached(cat: Catalog) -> None:
    assert load_catalog() is cat
    assert cat.version
    assert len(cat.requirements) >= 100
    assert CATALOG_PATH.name == "catalog.toml"


def test_ids_unique_and_well_formed(cat: Catalog) -> None:
    ids = cat.ids()
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, f"duplicate ids: {dupes}"
    for rid in ids:
        assert re.fullmatch(r"[A-Z]+-\d{3}", rid), rid
        assert rid.split("-")[0] in AREAS, f"{rid}: unknown area prefix"


def test_numbers_within_an_area_are_dense(cat: Catalog) -> None:
    """Ids count 001, 002... per area; a gap is a retired id and must be explained in notes."""
    by_area: dict[str, list[int]] = {}
    for req in cat.requirements:
        by_area.setdefault(req.area, []).append(int(req.id.split("-")[1]))
    for area, numbers in by_area.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), area


def test_conflicts_point_at_other_profile_and_are_symmetric(cat: Catalog) -> None:
    for req in cat.requirements:
        for other_id in req.conflicts_with:
            other = cat.get(other_id)
            assert len(req.profiles) == 1 and len(other.profiles) == 1, (req.id, other_id)
            assert req.profiles != other.profiles, (req.id, other_id)
            assert req.id in other.conflicts_with, f"{req.id} -> {other_id} is one-sided"


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("BUDGET-001", "BOUND-009"),  # no final model call vs one more tool-less turn
        ("BUDGET-002", "BOUND-013"),  # budget_exhausted vs error_max_turns
        ("TOOL-001", "CONC-002"),  # all parallel vs same key sequential
        ("TOOL-001", "CONC-004"),  # all parallel vs provider-wide lock
        ("TOOL-002", "CONC-001"),  # all sequential with an interactive call vs by key
        ("CHILD-001", "COST-006"),  # a child runs its parent's profile vs a child profile's own max_cost_usd
    ],
)
def test_known_conflicts_are_recorded(cat: Catalog, left: str, right: str) -> None:
    assert right in cat.get(left).conflicts_with


def test_should_and_may_name_a_known_capability(cat: Catalog) -> None:
    for req in cat.requirements:
        if req.level in ("SHOULD", "MAY"):
            assert req.capability, req.id
            assert not req.gating, req.id
        for cap in req.required_capabilities:
            assert cap in CAPABILITIES, f"{req.id}: {cap}"


def test_gating_follows_the_level(cat: Catalog) -> None:
    for req in cat.requirements:
        if req.level in ("MUST", "MUST NOT"):
            assert req.gating, req.id


def test_untestable_rows_say_why(cat: Catalog) -> None:
    for req in cat.requirements:
        assert (req.testability == "untestable") == bool(req.untestable_reason), req.id
        if req.testability == "untestable" and req.level == "DESCRIBED":
            assert not req.gating, f"{req.id}: an untestable descriptive rule cannot gate"


def test_sources_are_seed_sections(cat: Catalog) -> None:
    for req in cat.requirements:
        assert req.source.file in RULE_SECTIONS, f"{req.id}: {req.source.file}"
        assert req.source.section in RULE_SECTIONS[req.source.file], (
            f"{req.id}: section {req.source.section!r} is not a rule section of {req.source.file}"
        )


def test_every_normative_section_of_003_is_cited(cat: Catalog) -> None:
    cited = {r.source.section for r in cat.requirements if r.source.file == SEED_003}
    missing = [s for s in NORMATIVE_SECTIONS_003 if s not in cited]
    assert not missing, f"003 sections without requirements: {missing}"


def test_every_rule_section_of_000_and_001_is_cited(cat: Catalog) -> None:
    for seed in (SEED_000, SEED_001):
        cited = {r.source.section for r in cat.requirements if r.source.file == seed}
        assert set(RULE_SECTIONS[seed]) <= cited, set(RULE_SECTIONS[seed]) - cited


def test_profiles_follow_their_documents(cat: Catalog) -> None:
    """003 rows are kernel rows, 000/001 rows commonagent rows, except the rules that are
    explicit in 000 and silent in 003 (result order, the cancellation token), which hold for
    both profiles (docs/vocabulary.md)."""
    both = {r.id for r in cat.requirements if set(r.profiles) == {"kernel", "commonagent"}}
    assert {"TOOL-003", "STOP-001", "STOP-002", "STOP-003"} <= both
    for req in cat.requirements:
        if req.source.file == SEED_003:
            assert req.profiles == ["kernel"], req.id
        elif req.id not in both:
            assert req.profiles == ["commonagent"], req.id
            assert req.level == "DESCRIBED", req.id


def test_statements_are_one_sentence(cat: Catalog) -> None:
    for req in cat.requirements:
        assert req.statement.endswith("."), req.id
        assert not re.search(r"\.\s+[A-Z]", req.statement), f"{req.id}: more than one sentence"


def test_both_profiles_have_gating_requirements(cat: Catalog) -> None:
    for profile in ("kernel", "commonagent"):
        assert len(cat.gating(profile)) >= 40
    assert len(cat.musts("kernel")) >= 40
    assert cat.musts("commonagent") == []  # 000/001 are descriptive: no RFC 2119 levels


def test_get_is_case_insensitive_and_unknown_ids_raise(cat: Catalog) -> None:
    assert cat.get("loop-001").id == "LOOP-001"
    assert catalog_mod.get("BOUND-009") is cat.get("BOUND-009")
    with pytest.raises(UnknownRequirement, match="NOPE-001"):
        cat.get("NOPE-001")
    with pytest.raises(KeyError):
        cat.get("NOPE-001")


def test_profile_helpers(cat: Catalog) -> None:
    kernel = catalog_mod.for_profile("kernel")
    assert all("kernel" in r.profiles for r in kernel)
    assert {r.level for r in catalog_mod.musts("kernel")} == {"MUST", "MUST NOT"}
    with pytest.raises(ValueError, match="unknown profile"):
        cat.for_profile("hermes")


# ---------------------------------------------------------------------------- validation rules

_ROW = """
[[requirements]]
id = "{id}"
level = "{level}"
gating = {gating}
profiles = [{profiles}]
source = {{ file = "003_e9db79d6abeb7c7a.txt", section = "Done detection" }}
statement = "A statement long enough to pass."
testability = "black-box"
{extra}
"""


def _toml(*rows: dict) -> str:
    out = 'version = "t"\n'
    for row in rows:
        fields = {"level": "MUST", "gating": "true", "profiles": '"kernel"', "extra": ""} | row
        out += _ROW.format(**fields)
    return out


def test_valid_minimal_catalog_parses() -> None:
    cat = parse_catalog(_toml({"id": "A-001"}))
    assert cat.ids() == ["A-001"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (({"id": "A-001"}, {"id": "A-001"}), "A-001 is used twice"),
        (({"id": "A-1"},), "pattern"),
        (({"id": "A-001", "level": "SHOULD", "gating": "false"},), "must name the capability"),
        (({"id": "A-001", "gating": "false"},), "always gating"),
        (({"id": "A-001", "level": "MAY", "gating": "true", "extra": 'capability = "pipelining"'},),
         "never gating"),
        (({"id": "A-001", "level": "MAY", "gating": "false", "extra": 'capability = "teleport"'},),
         "not in adapter.CAPABILITIES"),
        (({"id": "A-001", "extra": 'testability = "untestable"'},), "untestable_reason"),
        (({"id": "A-001", "extra": 'conflicts_with = ["B-001"]'},), "unknown id B-001"),
        (
            (
                {"id": "A-001", "extra": 'conflicts_with = ["B-001"]'},
                {"id": "B-001", "profiles": '"commonagent"', "level": "DESCRIBED"},
            ),
            "not back",
        ),
        (
            (
                {"id": "A-001", "extra": 'conflicts_with = ["B-001"]'},
                {"id": "B-001", "extra": 'conflicts_with = ["A-001"]'},
            ),
            "same profile",
        ),
        (({"id": "A-001", "profiles": '"kernel", "hermes"'},), "kernel"),
        (({"id": "A-001", "extra": 'colour = "red"'},), "Extra inputs"),
    ],
)  # fmt: skip
def test_broken_catalogs_are_refused_with_a_clear_error(rows: tuple, message: str) -> None:
    text = _toml(*rows).replace('testability = "black-box"\ntestability', "testability")
    with pytest.raises(CatalogError, match=re.escape(message)):
        parse_catalog(text, origin="test.toml")


def test_bad_toml_names_the_file() -> None:
    with pytest.raises(CatalogError, match=r"^x\.toml: not valid TOML"):
        parse_catalog("version = ", origin="x.toml")


# ---------------------------------------------------------------------------- 001 message shapes


def test_messages_of_001_parse() -> None:
    examples = [
        {"role": "user", "text": "Do I need an umbrella?"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Charleston"}}],
        },
        {
            "role": "tool_result",
            "call_id": "c1",
            "content": "Charleston: 18°C, light rain",
            "is_error": False,
        },
        {"role": "assistant", "text": "Bring an umbrella: 18°C and light rain."},
        {"role": "system", "text": "You are a test agent."},
    ]
    parsed = [parse_message(m) for m in examples]
    assert isinstance(parsed[0], UserMessage)
    assert isinstance(parsed[1], AssistantMessage) and parsed[1].tool_calls[0].args == {
        "city": "Charleston"
    }
    assert isinstance(parsed[2], ToolResultMessage) and parsed[2].call_id == "c1"
    assert [m.model_dump(exclude_defaults=True) for m in parsed] == examples[:2] + [
        {k: v for k, v in examples[2].items() if k != "is_error"}
    ] + examples[3:]


@pytest.mark.parametrize(
    "bad",
    [
        {"text": "no role"},
        {"role": "robot", "text": "x"},
        {"role": "tool_result", "content": "no call id"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "t", "args": "not an object"}]},
    ],
)
def test_malformed_messages_are_refused(bad: dict) -> None:
    with pytest.raises(ValidationError):
        parse_message(bad)
