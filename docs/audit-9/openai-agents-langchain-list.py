"""List every gating FAIL cell of the openai-agents and langchain reports (audit9e population)."""
import json, sys
for k in ("openai-agents", "langchain"):
    r = json.load(open(f"docs/conformance-reports/{k}.json"))
    for q in r["requirements"]:
        if q.get("verdict") == "fail" and q.get("gating") is True:
            print(k, q["id"])
