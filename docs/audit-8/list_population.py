"""List the audit population: gating FAIL cells of the audited kernels' reports."""
import json, sys
for k in sys.argv[1:] or ["claude-agent-sdk"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating"):
            print(k, r["id"])
