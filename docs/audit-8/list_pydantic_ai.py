import json
d = json.load(open('docs/conformance-reports/pydantic-ai.json'))
for r in d['requirements']:
    if r.get('verdict') == 'fail' and r.get('gating'):
        print(r['id'])
