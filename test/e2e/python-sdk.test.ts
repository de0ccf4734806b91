// The official RunPod Python SDK as a worker, run unchanged by the process executor (examples/python-echo).
// The SDK is not on every machine (PyPI is not reachable here): without `python3 -c "import runpod"` the test is
// skipped with the reason printed, as the issue allows.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeFleet, startFleet, type Fleet } from '../helpers/fleet.ts';
import { ROOT } from '../helpers/processes.ts';

const probe = spawnSync('python3', ['-c', 'import runpod; print(runpod.__version__)'], { encoding: 'utf8' });
const available = probe.status === 0;
if (!available) {
  console.log(
    `python-sdk: skipped — the official SDK is not installed here (python3 -c "import runpod": ${
      (probe.stderr || String(probe.error ?? 'failed')).trim().split('\n').pop() ?? 'failed'
    }); install it with: pip install -r examples/python-echo/requirements.txt`,
  );
}

describe.skipIf(!available)('official Python SDK worker', () => {
  let f: Fleet;
  beforeAll(async () => {
    f = await startFleet();
  });
  afterAll(async () => {
    if (f) await closeFleet(f);
  });

  it('runs jobs, reports progress and failures through the protocol', async () => {
    const ep = await f.endpoint(
      { workersMax: 1 },
      { imageName: `file://${join(ROOT, 'examples/python-echo')}`, dockerStartCmd: ['python3', '-u', 'handler.py'] },
    );
    const ok = await f.waitJob(ep, await f.run(ep, { name: 'wharf' }), 60_000);
    expect(ok).toMatchObject({ status: 'COMPLETED', output: { greeting: 'hello wharf', echo: { name: 'wharf' } } });
    const failed = await f.waitJob(ep, await f.run(ep, { name: 'x', fail: 'nope' }), 30_000);
    expect(failed.status).toBe('FAILED');
    expect(JSON.parse(failed.error as string)).toMatchObject({ error_message: 'nope' });
  });
});
