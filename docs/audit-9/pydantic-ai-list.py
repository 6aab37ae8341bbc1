import json, sys
r = json.load(open("docs/conformance-reports/pydantic-ai.json"))
for q in r["requirements"]:
    if q.get("verdict") == "fail" and q.get("gating") is True:
        print(q["id"])
