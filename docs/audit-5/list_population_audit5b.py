"""List the audit population for audit5b: gating FAIL cells of langchain and strands-agents."""
import json, sys
for k in ["langchain", "strands-agents"]:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating") is True:
            print(f"{k}\t{r['id']}")
