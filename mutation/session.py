"""cosmic-ray sessions for mutation/run.sh: one config per module, a seeded sample, the summary.

Kept apart from run.sh so the sampling (which mutants ran) and the counting (what the score means)
are readable Python, not shell. Run by run.sh inside the scratch copy; see docs/selftest.md.
"""

from __future__ import annotations

import ast
import json
import random
import sqlite3
import sys
import tomllib
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

HERE = Path(__file__).resolve().parent
SKIPPED_BY_SAMPLE = "not in the seeded sample (mutation/modules.toml)"
IN_ANNOTATION = "equivalent: inside a type annotation (never evaluated: from __future__ import annotations)"


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) of every annotation of a module that nothing evaluates; a mutant there changes
    nothing at run time. The fields of a pydantic model are left out: pydantic evaluates them."""
    tree = ast.parse(source)
    models = {"BaseModel"}  # and the module's classes derived from it, in order of definition
    evaluated = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        if any(ast.unparse(b) in models for b in cls.bases):
            models.add(cls.name)
            evaluated |= {id(stmt) for stmt in cls.body if isinstance(stmt, ast.AnnAssign)}
    spans = []
    for node in ast.walk(tree):
        if id(node) in evaluated:
            continue
        notes = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            notes.append(node.returns)
        elif isinstance(node, ast.arg):
            notes.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in notes if n is not None]
    return spans


def modules() -> dict[str, dict]:
    """Each module's settings: its own table of modules.toml over the defaults."""
    data = tomllib.loads((HERE / "modules.toml").read_text())
    return {name: {**data["defaults"], **table} for name, table in data["modules"].items()}


def write_config(module: str, out: Path) -> None:
    """The cosmic-ray config of one module (local distributor: one mutant at a time)."""
    row = modules()[module]
    out.write_text(
        "[cosmic-ray]\n"
        f'module-path = "reference_kernel/{module}"\n'
        f"timeout = {float(row['timeout'])}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(row['test-command'])}\n\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
    )


def site(item) -> tuple:
    """Where a mutant lives: its operator family (ReplaceBinaryOperator_Add_Sub -> ReplaceBinaryOperator) and position."""
    m = item.mutations[0]
    family = m.operator_name.split("_")[0] if "Operator_" in m.operator_name else m.operator_name
    return family, tuple(m.start_pos), tuple(m.end_pos)


def sample(module: str, session: Path) -> None:
    """Keep one mutant of each of `sample` sites drawn with the seed; mark the rest skipped (0: run all).

    A site is an operator family at one position: one binary operator has a dozen replacements
    that mostly fail alike, so drawing sites rather than mutants spreads the sample over the code.
    """
    row = modules()[module]
    rng = random.Random(f"{row['seed']}:{module}")
    source = Path("reference_kernel", module).read_text()
    assert "from __future__ import annotations" in source, f"{module}: annotations are evaluated"
    notes = annotation_spans(source)
    with use_db(str(session), WorkDB.Mode.open) as db:
        pending = sorted(db.pending_work_items, key=lambda item: item.job_id)
        inert = [i.job_id for i in pending if any(a <= tuple(i.mutations[0].start_pos) < b for a, b in notes)]
        db.set_multiple_results(inert, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=IN_ANNOTATION))
        pending = [item for item in pending if item.job_id not in set(inert)]
        size = int(row["sample"])
        if not size or size >= len(pending):
            return
        sites: dict[tuple, list] = {}
        for item in pending:
            sites.setdefault(site(item), []).append(item.job_id)
        drawn = rng.sample(sorted(sites), min(size, len(sites)))
        keep = {rng.choice(sites[key]) for key in drawn}
        skip = [item.job_id for item in pending if item.job_id not in keep]
        db.set_multiple_results(skip, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=SKIPPED_BY_SAMPLE))


def retest(session: Path) -> int:
    """Forget the survivors' results, so the next `cosmic-ray exec` runs them again (after a check
    was added, or the test command changed); returns how many."""
    with sqlite3.connect(session) as db:
        return db.execute("DELETE FROM work_results WHERE upper(test_outcome) = 'SURVIVED'").rowcount


def summarise(sessions: Path) -> dict:
    """Per module: mutants generated, run, killed, survived (with each survivor's diff)."""
    table = {}
    for path in sorted(sessions.glob("*.sqlite")):
        module = path.stem + ".py"
        with use_db(str(path), WorkDB.Mode.open) as db:
            total = db.num_work_items
            items = {item.job_id: item for item in db.work_items}
            ran = killed = inert = 0
            survivors, errors = [], []
            for job, result in db.results:
                if result.worker_outcome == WorkerOutcome.SKIPPED:
                    inert += result.output == IN_ANNOTATION
                    continue
                ran += 1
                if result.test_outcome == TestOutcome.SURVIVED:
                    m = items[job].mutations[0]
                    survivors.append({"job": job, "operator": m.operator_name, "line": m.start_pos[0],
                                      "occurrence": m.occurrence, "diff": result.diff})
                elif result.worker_outcome != WorkerOutcome.NORMAL:
                    errors.append({"job": job, "outcome": str(result.worker_outcome), "output": (result.output or "")[-400:]})
                else:
                    killed += 1
        table[module] = {"mutants": total, "in_annotations": inert, "ran": ran, "killed": killed, "survived": len(survivors),
                         "errors": len(errors), "survivors": survivors, "error_items": errors}
    return table


def report(sessions: Path) -> str:
    table = summarise(sessions)
    (sessions / "summary.json").write_text(json.dumps(table, indent=1))
    lines = ["| module | mutants | in annotations | sampled, ran | killed | survived | worker errors |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for module, row in table.items():
        lines.append(f"| {module} | {row['mutants']} | {row['in_annotations']} | {row['ran']} | {row['killed']} | {row['survived']} | {row['errors']} |")
    for module, row in table.items():
        for s in row["survivors"]:
            lines += ["", f"### {module}:{s['line']} {s['operator']} #{s['occurrence']} ({s['job']})", "```diff", (s["diff"] or "").strip(), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "modules":
        print("\n".join(modules()))
    elif command == "config":
        write_config(args[0], Path(args[1]))
    elif command == "sample":
        sample(args[0], Path(args[1]))
    elif command == "retest":
        print(retest(Path(args[0])))
    elif command == "summary":
        text = report(Path(args[0]))
        (Path(args[0]) / "summary.md").write_text(text)
        print(text)
    else:
        sys.exit(f"mutation/session.py: unknown command {command!r} (modules | config | sample | retest | summary)")
