"""List the gating FAIL cells of audit7a's kernels (hermes)."""
import json
for k in ["hermes"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating"):
            print(k, r["id"])
