"""List the audit-8 (audit8e) population: verdict == fail and gating == true."""
import json
for k in ["openai-agents", "langchain"]:
    r = json.load(open(f"docs/conformance-reports/{k}.json"))
    for q in r["requirements"]:
        if q.get("verdict") == "fail" and q.get("gating"):
            print(k, q["id"])
