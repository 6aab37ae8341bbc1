"""List the audit population of audit2a: gating FAIL cells of hermes and strands-agents."""
import json, sys
for k in ("hermes", "strands-agents"):
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    cells = [r for r in d["requirements"] if r["verdict"] == "fail" and r["gating"]]
    print(f"## {k}: {len(cells)} gating FAIL cells")
    for r in cells:
        print(f"- {r['id']}")
