# lists the population: every gating FAIL of audit3b's kernels
import json
for k in ['smolagents','langchain']:
    r=json.load(open(f'docs/conformance-reports/{k}.json'))
    for q in r['requirements']:
        if q.get('verdict')=='fail' and q.get('gating'):
            print(k,q['id'])
