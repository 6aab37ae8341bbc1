"""The representative sample of requirements the project's default tests certify a second time.

Two tests compare a second certification of the reference kernel with the session's shared
serial in-process run (tests/conftest.py ``reference_run``): over the stdio wire
(tests/test_wire_equivalence.py) and sharded with ``akc run --jobs 2`` (tests/test_jobs.py);
tests/test_node_kernel.py certifies the Node example kernel. Over every requirement each is a
whole-suite run, marked ``whole_suite``: deselected by ``python -m pytest``, run by
``python -m pytest -m whole_suite``, its own step of ``.ci/run``. The default tier runs the same
comparisons over this sample.

Chosen on purpose, not at random: every area of the catalog, and, more than one of each, the areas
where the transport or the sharding matters most —

* concurrency: CONC-001 (calls at once, with its property) and TOOL-003 (results in the order the
  model asked: three properties and the smoke scenario the sharding tests kill a shard in);
* cancellation: STOP-001 (at the next step boundary), STOP-002 (a model stream in flight
  abandoned: over stdio, a cancel crosses the wire), STOP-006 (children under a child token);
* children: CHILD-001 and CHILD-004 (a child turn's identity), SESS-004 (a child's session),
  COST-005 (the cost bound over descendants, a property);
* the journal: JOURNAL-004 (each tool call's record), JOURNAL-005 (each turn finished, whatever
  way it ended: six scenarios);
* cost: COST-001 (cost_usd of every usage event: floats that cross the wire as JSON), COST-005;
* the rest, one or two per area: LOOP-001 (the first step) and LOOP-007 (a property), SPAN-001
  (its checks timed with the harness clock are the one difference stdio is allowed), GATE-006
  (the plan-ready veto), BOUND-005, DONE-001 (a property and a smoke scenario), DOOM-004 (a
  property), TURN-002 (one turn per session at a time: messages arriving concurrently) and
  TURN-014 (a failing model call), BUDGET-001, IDENT-001, MSG-003, TAG-002 (a property).

Both profiles are covered (commonagent: TURN, SESS, MSG, CHILD, JOURNAL, TAG, IDENT, BUDGET), and
capabilities a kernel may leave out (STOP-006, COST-005: the Node kernel does not offer them).
About a quarter of the suite's cost (72 of its ~300 checks, properties weighed as 13 scenarios).
"""

from __future__ import annotations

SAMPLE: list[str] = [
    "BOUND-005", "BUDGET-001", "CHILD-001", "CHILD-004", "CONC-001", "COST-001", "COST-005",
    "DONE-001", "DOOM-004", "GATE-006", "IDENT-001", "JOURNAL-004", "JOURNAL-005", "LOOP-001",
    "LOOP-007", "MSG-003", "SESS-004", "SPAN-001", "STOP-001", "STOP-002", "STOP-006", "TAG-002",
    "TOOL-003", "TURN-002", "TURN-014",
]


def req_args(ids: list[str] = SAMPLE) -> list[str]:
    """``--req ID`` for each id (``akc run``'s selection)."""
    return [arg for rid in ids for arg in ("--req", rid)]
