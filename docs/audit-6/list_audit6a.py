#!/usr/bin/env python3
"""List the gating FAIL cells of the audited kernels (audit6a: hermes)."""
import json, sys
for k in sys.argv[1:] or ["hermes"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r["verdict"] == "fail" and r.get("gating"):
            print(k, r["id"])
