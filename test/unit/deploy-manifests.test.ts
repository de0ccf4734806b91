// deploy/kubernetes parses, names what kustomization.yaml lists, and gives the Wharf service account every verb the
// Kubernetes executor uses (src/fleet/executors/kubernetes.ts).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';

import { ROOT } from '../helpers/processes.ts';

const DIR = join(ROOT, 'deploy/kubernetes');
const docs = (file: string): any[] => loadAllYaml(readFileSync(join(DIR, file), 'utf8'));

describe('deploy/kubernetes', () => {
  it('every file parses into objects with apiVersion, kind and name; kustomization lists the resources', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'));
    for (const f of files) {
      for (const d of docs(f)) {
        expect(d.apiVersion, f).toBeTruthy();
        expect(d.kind, f).toBeTruthy();
        if (d.kind !== 'Kustomization') expect(d.metadata?.name, f).toBeTruthy();
      }
    }
    const [k] = docs('kustomization.yaml');
    for (const r of k.resources as string[]) expect(files).toContain(r);
    // The secret is created by hand from the example, never applied with placeholder values.
    expect(k.resources).not.toContain('secrets.example.yaml');
  });

  it('grants the executor what it does: pods (watch, logs), secrets, config maps, claims', () => {
    const role = docs('rbac.yaml').find((d) => d.kind === 'Role');
    const can = (resource: string, verb: string) =>
      (role.rules as any[]).some((r) => r.resources.includes(resource) && r.verbs.includes(verb));
    for (const verb of ['get', 'list', 'watch', 'create', 'delete']) expect(can('pods', verb), verb).toBe(true);
    expect(can('pods/log', 'get')).toBe(true);
    for (const verb of ['list', 'create', 'update', 'delete']) expect(can('secrets', verb), verb).toBe(true);
    expect(can('configmaps', 'create')).toBe(true);
    expect(can('persistentvolumeclaims', 'create')).toBe(true);
  });

  it('runs Wharf with the kubernetes executor on PostgreSQL, a stable node id and the service as public URL', () => {
    const sts = docs('wharf.yaml').find((d) => d.kind === 'StatefulSet');
    const c = sts.spec.template.spec.containers[0];
    const env = Object.fromEntries((c.env as any[]).map((e) => [e.name, e.value ?? e.valueFrom]));
    expect(env.WHARF_EXECUTOR).toBe('kubernetes');
    expect(env.WHARF_STORE).toEqual({ secretKeyRef: { name: 'wharf', key: 'store' } });
    expect(env.WHARF_NODE_ID).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(env.WHARF_PUBLIC_URL).toMatch(/^http:\/\/wharf\.wharf\.svc/);
    expect(sts.spec.template.spec.serviceAccountName).toBe('wharf');
  });
});
