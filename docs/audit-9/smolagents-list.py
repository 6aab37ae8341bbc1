"""List the audit population: smolagents requirements with verdict fail and gating true."""
import json, sys
path = sys.argv[1] if len(sys.argv) > 1 else "docs/conformance-reports/smolagents.json"
for r in json.load(open(path))["requirements"]:
    if r["verdict"] == "fail" and r.get("gating"):
        print(r["id"])
