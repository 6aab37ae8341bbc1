"""List the audit population: gating FAIL cells of the audited kernels."""
import json, sys
for k in sys.argv[1:]:
    r = json.load(open(f"docs/conformance-reports/{k}.json"))
    cells = [q for q in r["requirements"] if q.get("verdict") == "fail" and q.get("gating")]
    print(f"## {k}: {len(cells)}")
    for q in cells:
        print(q["id"])
