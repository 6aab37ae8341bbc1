"""The blind round's mutants (see ``_reg``): importing this package registers them all."""

import importlib

MODULES = ("k_loop", "k_span_conc", "k_gate_bound", "k_cost", "k_done_doom_stop", "a_turn", "a_tool", "a_stop_budget", "a_ident_sess", "a_tag_msg_journal")

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")
