# Population for audit3a: gating FAIL cells of hermes and strands-agents
import json
for k in ["hermes", "strands-agents"]:
    r = json.load(open(f"docs/conformance-reports/{k}.json"))
    for q in r["requirements"]:
        if q.get("verdict") == "fail" and q.get("gating"):
            print(k, q["id"])
