#!/usr/bin/env python3
"""audit5c: list the population (verdict == fail and gating == true) of the given kernels' reports."""
import json, sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
kernels = sys.argv[1:] or ["hermes"]
for k in kernels:
    rep = json.loads((root / "docs/conformance-reports" / f"{k}.json").read_text())
    for r in rep["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating") is True:
            print(f"{k}\t{r['id']}")
