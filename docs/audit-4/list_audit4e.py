"""List the audit-4 population for audit4e: gating FAIL cells of pydantic-ai and langchain."""
import json, sys
KERNELS = ["pydantic-ai", "langchain"]
for k in KERNELS:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating") is True:
            print(f"{k}\t{r['id']}\t{(r.get('fail_cause') or {}).get('cause', '') if isinstance(r.get('fail_cause'), dict) else r.get('fail_cause')}")
