# Population for audit6d: gating FAIL cells of google-adk and strands-agents
import json
for k in ["google-adk", "strands-agents"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating"):
            print(k, r["id"])
