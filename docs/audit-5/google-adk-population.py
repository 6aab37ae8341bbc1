# Population for audit5e: gating FAIL cells of google-adk
import json
d = json.load(open('docs/conformance-reports/google-adk.json'))
for r in d['requirements']:
    if r.get('verdict') == 'fail' and r.get('gating'):
        print(r['id'])
