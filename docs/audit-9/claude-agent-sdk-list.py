# Population for audit9a: every gating FAIL of claude-agent-sdk, minus LOOP-005 (audited separately).
import json
r = json.load(open("docs/conformance-reports/claude-agent-sdk.json"))
for q in r["requirements"]:
    if q.get("verdict") == "fail" and q.get("gating") is True and q["id"] != "LOOP-005":
        print(q["id"])
