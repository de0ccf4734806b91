// Secret references in a worker's env (fleet/worker-env.ts): which names a template's and an endpoint's env values
// reference, and their substitution; the end-to-end path with real workers is test/e2e/fleet-secrets.test.ts.

import { expect, it } from 'vitest';

import { ENDPOINT_DEFAULTS, TEMPLATE_DEFAULTS } from '../../src/domain/index.ts';
import { MissingSecretsError } from '../../src/engine/index.ts';
import { secretReferences, workerEnv } from '../../src/fleet/worker-env.ts';

const env = (templateEnv: Record<string, string>, endpointEnv: Record<string, string>, secrets?: Map<string, string>) =>
  workerEnv({
    publicUrl: 'http://127.0.0.1:8080',
    endpoint: {
      ...ENDPOINT_DEFAULTS,
      id: 'ep',
      userId: 'u',
      templateId: 't',
      version: 1,
      createdAt: 0,
      env: endpointEnv,
    },
    template: {
      ...TEMPLATE_DEFAULTS,
      id: 't',
      userId: 'u',
      name: 't',
      imageName: 'i',
      createdAt: 0,
      env: templateEnv,
    },
    workerId: 'w',
    workerKey: 'k',
    pingIntervalMs: 1000,
    gpuTypeId: '',
    gpuIndices: [],
    dataCenterId: 'EU-RO-1',
    ...(secrets ? { secrets } : {}),
  });

it('finds references with or without whitespace, in any value, once per name', () => {
  expect(
    secretReferences(
      { A: '{{ RUNPOD_SECRET_hf }}', B: 'x{{RUNPOD_SECRET_a-b_1}}y{{\tRUNPOD_SECRET_hf  }}' },
      { C: '{{ RUNPOD_SECRET_bad.name }}', D: 'RUNPOD_SECRET_plain {{ OTHER }} {RUNPOD_SECRET_x}' },
    ),
  ).toEqual(new Set(['hf', 'a-b_1', 'bad.name']));
});

it('replaces every reference by its value, verbatim ($ patterns too); protocol variables still win', () => {
  const secrets = new Map([
    ['hf', 'hf_$&$1'],
    ['k', 'v'],
  ]);
  const out = env(
    {
      HF_TOKEN: '{{ RUNPOD_SECRET_hf }}',
      BOTH: '{{RUNPOD_SECRET_k}}:{{ RUNPOD_SECRET_hf }}',
      RUNPOD_POD_ID: '{{ RUNPOD_SECRET_k }}',
    },
    { FROM_ENDPOINT: 'Bearer {{ RUNPOD_SECRET_k }}' },
    secrets,
  );
  expect(out).toMatchObject({ HF_TOKEN: 'hf_$&$1', BOTH: 'v:hf_$&$1', FROM_ENDPOINT: 'Bearer v', RUNPOD_POD_ID: 'w' });
});

it('a reference without a value is a MissingSecretsError naming it, never the literal text', () => {
  const missing = (() => {
    try {
      env({ A: '{{ RUNPOD_SECRET_nope }}' }, { B: '{{ RUNPOD_SECRET_bad.name }}' }, new Map([['other', 'x']]));
    } catch (error) {
      return error;
    }
  })();
  expect(missing).toBeInstanceOf(MissingSecretsError);
  expect((missing as MissingSecretsError).names).toEqual(['nope']);
  expect(() => env({}, { B: '{{ RUNPOD_SECRET_ }}' })).toThrow(/secret "" \(\{\{ RUNPOD_SECRET_ \}\}\)/);
  expect(env({ A: 'no references' }, {})).toMatchObject({ A: 'no references' });
});
