"""List the audit population: gating FAIL cells of the smolagents report."""
import json
d = json.load(open("docs/conformance-reports/smolagents.json"))
for r in d["requirements"]:
    if r.get("verdict") == "fail" and r.get("gating"):
        print(r["id"])
