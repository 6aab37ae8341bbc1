"""List the gating FAIL cells of the hermes report (audit8c population)."""
import json
d = json.load(open("docs/conformance-reports/hermes.json"))
for r in d["requirements"]:
    if r.get("verdict") == "fail" and r.get("gating"):
        print(r["id"])
