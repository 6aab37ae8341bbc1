# population: gating FAIL cells of pydantic-ai (audit6f)
import json
d = json.load(open('docs/conformance-reports/pydantic-ai.json'))
for r in d['requirements']:
    if r['verdict'] == 'fail' and r['gating']:
        print(r['id'])
