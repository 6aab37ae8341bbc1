"""List the audit population for audit2c: gating FAIL cells of claude-agent-sdk and pydantic-ai."""
import json
for k in ["claude-agent-sdk", "pydantic-ai"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    fails = [r for r in d["requirements"] if r.get("verdict") == "fail" and r.get("gating")]
    print(f"## {k}: {len(fails)}")
    for r in fails:
        print(r["id"])
