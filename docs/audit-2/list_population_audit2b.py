"""List the audit population: gating FAIL cells of audit2b's kernels."""
import json, sys
KERNELS = ["smolagents", "google-adk"]
for k in KERNELS:
    d = json.load(open(f"docs/conformance-reports/{k}.json"))
    rs = [r for r in d["requirements"] if r.get("verdict") == "fail" and r.get("gating")]
    print(f"## {k}: {len(rs)} gating FAIL cells")
    for r in rs:
        fc = r.get("fail_cause") or {}
        print(f"{r['id']}\t{fc.get('source','-')}\t{fc.get('cause','-')[:120]}")
