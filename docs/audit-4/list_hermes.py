import json
r = json.load(open("docs/conformance-reports/hermes.json"))
for q in r["requirements"]:
    if q.get("verdict") == "fail" and q.get("gating") is True:
        print(q["id"])
