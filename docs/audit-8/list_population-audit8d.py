import json,sys
for k in ["google-adk","strands-agents"]:
    r=json.load(open(f"docs/conformance-reports/{k}.json"))
    for q in r["requirements"]:
        if q.get("verdict")=="fail" and q.get("gating"):
            print(k, q["id"])
