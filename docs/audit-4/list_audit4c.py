import json
for k in ["claude-agent-sdk", "strands-agents"]:
    r = json.load(open(f"docs/conformance-reports/{k}.json"))
    cells = [q for q in r["requirements"] if q.get("verdict") == "fail" and q.get("gating") is True]
    print(f"## {k}: {len(cells)}")
    for q in cells:
        print(q["id"])
