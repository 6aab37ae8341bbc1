# Population: gating FAIL cells of audit6e's kernels
import json
for k in ("openai-agents", "langchain"):
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    for r in d["requirements"]:
        if r.get("verdict") == "fail" and r.get("gating"):
            print(k, r["id"])
