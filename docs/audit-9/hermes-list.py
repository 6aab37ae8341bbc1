"""List the audit population: hermes requirements with verdict == fail and gating == true."""
import json, sys
path = sys.argv[1] if len(sys.argv) > 1 else "docs/conformance-reports/hermes.json"
d = json.load(open(path))
for r in d["requirements"]:
    if r.get("verdict") == "fail" and r.get("gating") is True:
        print(r["id"])
