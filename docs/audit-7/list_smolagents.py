import json
r=json.load(open('docs/conformance-reports/smolagents.json'))
for q in r['requirements']:
    if q.get('verdict')=='fail' and q.get('gating'):
        print(q['id'])
