"""UUIDv7 ids: version and variant bits, time order, monotonic within one millisecond."""

from __future__ import annotations

import random
import uuid

from hypothesis import given
from hypothesis import strategies as st

from reference_kernel.ids import IdGenerator, is_uuid7, uuid7


def _ms(u: uuid.UUID) -> int:
    return u.int >> 80


def test_version_and_variant_bits() -> None:
    u = uuid7(1_700_000_000_000)
    assert u.version == 7
    assert u.variant == uuid.RFC_4122
    assert (u.int >> 62) & 0b11 == 0b10
    assert _ms(u) == 1_700_000_000_000
    assert is_uuid7(str(u))


def test_is_uuid7_rejects_other_versions() -> None:
    assert not is_uuid7(str(uuid.uuid4()))
    assert not is_uuid7("not-a-uuid")
    assert not is_uuid7(None)  # type: ignore[arg-type]


def test_ids_in_sequence_sort_in_creation_order() -> None:
    ids = [str(uuid7()) for _ in range(2000)]
    assert sorted(ids) == ids
    assert len(set(ids)) == len(ids)


def test_many_ids_in_one_millisecond_keep_creation_order() -> None:
    gen = IdGenerator(clock=lambda: 1_700_000_000.0, random=random.Random(1))
    ids = [gen() for _ in range(10_000)]  # more than the 12-bit counter holds
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(is_uuid7(i) for i in ids)
    assert uuid.UUID(ids[0]).int >> 80 == 1_700_000_000_000


def test_a_clock_going_backwards_does_not_break_order() -> None:
    times = iter([5.0, 5.0, 4.0, 3.0, 6.0])
    gen = IdGenerator(clock=lambda: next(times), random=random.Random(2))
    ids = [gen() for _ in range(5)]
    assert ids == sorted(ids)


def test_seeded_generators_are_reproducible() -> None:
    def make() -> list[str]:
        gen = IdGenerator(clock=lambda: 1.5, random=random.Random(7))
        return [gen() for _ in range(5)]

    assert make() == make()


@given(st.lists(st.integers(0, 3), min_size=1, max_size=200), st.integers(0, 2**40))
def test_non_decreasing_clock_gives_increasing_ids(steps: list[int], start: int) -> None:
    now = [start]
    gen = IdGenerator(clock=lambda: now[0] / 1000, random=random.Random(0))
    ids = []
    for step in steps:
        now[0] += step
        ids.append(gen())
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 7 for i in ids)
