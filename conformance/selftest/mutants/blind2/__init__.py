"""The second blind round's mutants (registered through ``blind._reg``): importing this package
registers them all. Written from the seeds alone (docs/blind-round-2.md has the first results)."""

import importlib

MODULES = ("k_loop", "k_gate_span", "k_bound_cost_doom", "a_tool", "a_turn", "a_ident_tag_msg")

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
