import json,sys
d=json.load(open('docs/conformance-reports/smolagents.json'))
rs=[r for r in d['requirements'] if r.get('verdict')=='fail' and r.get('gating')]
print("# smolagents gating FAIL cells (population for audit-4, audit4b)\n")
print(f"{len(rs)} cells, from docs/conformance-reports/smolagents.json (verdict == fail, gating == true)\n")
for r in rs:
    fc=r.get('fail_cause') or {}
    print(f"- {r['id']} ({r['level']}): {(r.get('message') or '')[:160]} | cause: {fc.get('cause','')[:120]} | source: {fc.get('source','')}")
