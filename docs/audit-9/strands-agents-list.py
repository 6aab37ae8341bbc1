"""List the gating FAIL cells of strands-agents (audit 9d population). Run from repo root."""
import json
r = json.load(open("docs/conformance-reports/strands-agents.json"))
for q in r["requirements"]:
    if q.get("verdict") == "fail" and q.get("gating") is True:
        print(q["id"])
