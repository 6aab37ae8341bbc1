"""List the population for audit5f: gating FAIL cells of pydantic-ai."""
import json
for k in ["pydantic-ai"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating"):
            print(k, r["id"])
