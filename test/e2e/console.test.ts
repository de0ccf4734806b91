// The web console (console/, served at /console) in a real browser: Debian's Chromium driven by playwright-core,
// against a server whose supervisor runs real worker processes (process executor, examples/echo-ts).
//
// Without /usr/bin/chromium the suite is skipped with a printed reason (.ci/run installs it). With
// WHARF_CONSOLE_SCREENSHOTS=1 it also writes the screenshots of docs/console/*.png.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  CHROMIUM,
  ensureConsoleBuilt,
  HAS_CHROMIUM,
  launchConsoleBrowser,
  type ConsoleBrowser,
} from '../helpers/console.ts';
import { closeFleet, ECHO_TEMPLATE, startFleet, type Fleet } from '../helpers/fleet.ts';
import { gql } from '../helpers/graphql.ts';
import { ROOT } from '../helpers/processes.ts';

if (!HAS_CHROMIUM) {
  process.stdout.write(`skipping the console e2e tests: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);
}
const SHOTS = process.env['WHARF_CONSOLE_SCREENSHOTS'] === '1' ? join(ROOT, 'docs/console') : null;

describe.skipIf(!HAS_CHROMIUM)('web console', () => {
  let fleet: Fleet;
  let page: Page;
  let browser: ConsoleBrowser | undefined;
  let endpointId = '';

  const shot = async (name: string, target: Page = page) => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await target.evaluate(() => window.scrollTo(0, 0));
    await target.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  };
  const alert = (): Locator => page.getByRole('alert');
  const go = (path: string) => page.goto(`${fleet.url}/console${path}`);
  /** The settings form of an endpoint (made through the API: what the console itself cannot make). */
  const settings = async (id: string): Promise<Locator> => {
    await go(`/endpoints/${id}/settings`);
    const form = page.getByRole('form', { name: 'Save settings' });
    await form.waitFor();
    return form;
  };
  const endpointJson = async (id: string) => (await fleet.api('GET', `/v1/endpoints/${id}`)).json;

  beforeAll(async () => {
    ensureConsoleBuilt();
    fleet = await startFleet();
    browser = await launchConsoleBrowser();
    ({ page } = browser);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (fleet) await closeFleet(fleet);
  }, 30_000);

  it('serves the built console with content types, client-side routes and no key', async () => {
    const index = await fetch(`${fleet.url}/console/endpoints/some-id/logs`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await index.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await fetch(`${fleet.url}${script}`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(js.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${fleet.url}${style}`)).headers.get('content-type')).toMatch(/^text\/css/);
    expect((await fetch(`${fleet.url}/console/favicon.svg`)).headers.get('content-type')).toBe('image/svg+xml');
    expect((await fetch(`${fleet.url}/console/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${fleet.url}/console/..%2f..%2fpackage.json`)).status).toBe(404);
  });

  it('signs in with an API key (a wrong one shows the server message), kept in sessionStorage', async () => {
    await go('/');
    await shot('sign-in');
    const key = page.getByLabel('API key');
    await key.fill('wharf_not_a_real_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => alert().textContent()).toContain('Missing or invalid API key');

    await key.fill(fleet.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('wharf.console.apiKey'))).toBe(fleet.key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
  });

  it('creates a template; a taken name shows the server message', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates' }).click();
    const form = page.getByRole('form', { name: 'New template' });
    const fill = async () => {
      await form.getByLabel('Name').fill('echo-ts');
      await form.getByLabel('Image').fill(ECHO_TEMPLATE.imageName);
      await form.getByLabel('Start command').fill(ECHO_TEMPLATE.dockerStartCmd.join('\n'));
      await form.getByLabel('Environment').fill('WHARF_WORKER_RETRY_BASE_MS=100');
      await form.getByRole('button', { name: 'Create template' }).click();
    };
    await fill();
    await page.getByRole('status').filter({ hasText: 'Template echo-ts created.' }).waitFor();
    await page.getByRole('cell', { name: 'node worker.ts' }).waitFor();
    await shot('templates');
    await fill();
    await expect.poll(() => alert().textContent()).toContain('A template named echo-ts already exists');
  });

  it('creates an endpoint with the form (checked before sending)', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Endpoints' }).click();
    await page.getByRole('link', { name: 'New endpoint' }).click();
    const form = page.getByRole('form', { name: 'Create endpoint' });
    await form.getByLabel('Name', { exact: true }).fill('console-e2e');
    await form.getByLabel('Maximum workers').fill('1');
    await form.getByLabel('Idle timeout (s)').fill('0');
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    // Checked in the browser: the bad field says why and gets the focus.
    const idle = form.getByLabel('Idle timeout (s)');
    await expect.poll(() => idle.getAttribute('aria-invalid')).toBe('true');
    expect(await form.textContent()).toContain('Idle timeout must be between 1 and 3600.');
    expect(await idle.evaluate((el) => el === document.activeElement)).toBe(true);

    await idle.fill('60');
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: /console-e2e/, level: 1 }).waitFor();
    endpointId = /\/console\/endpoints\/([^/]+)/.exec(page.url())![1]!;
    const created = await fleet.api('GET', `/v1/endpoints/${endpointId}`);
    expect(created.json).toMatchObject({ name: 'console-e2e', computeType: 'CPU', workersMax: 1, idleTimeout: 60 });
  });

  it('runs a job and shows its streamed output; bad input shows why', async () => {
    await page.getByRole('link', { name: 'Run' }).click();
    const input = page.getByLabel('Input (JSON)');
    await input.fill('{"stream": ');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    expect(await page.getByRole('form', { name: 'Run a job' }).textContent()).toContain('The input is not valid JSON');

    // A rule only the server knows: its message is shown as it sent it.
    await input.fill('{"stream": 3}');
    await page.getByText('Options').click();
    await page.getByLabel('Webhook URL').fill('ftp://example.test/hook');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await expect.poll(() => alert().textContent()).toContain('webhook must use http or https');

    await page.getByLabel('Webhook URL').fill('');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const stream = page.getByRole('log', { name: 'Streamed output' });
    await expect.poll(() => stream.getByRole('listitem').count(), { timeout: 30_000 }).toBe(3);
    expect(await stream.textContent()).toContain('{"chunk":2}');
    await page.locator('.run-result .badge', { hasText: 'completed' }).waitFor({ timeout: 15_000 });
    await shot('run-job');

    // Sync: /runsync answers with the result.
    await page.getByRole('radio', { name: /Sync/ }).check();
    await input.fill('{"hello": "sync"}');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await expect.poll(() => page.getByTestId('output').textContent(), { timeout: 20_000 }).toContain('"hello": "sync"');
    await page.getByRole('radio', { name: /Async/ }).check();
  });

  it('cancels a running job from the run panel', async () => {
    await page.getByLabel('Input (JSON)').fill('{"sleepMs": 20000}');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.locator('.run-result .badge', { hasText: 'in progress' }).waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.locator('.run-result .badge', { hasText: 'cancelled' }).waitFor();
  });

  it('shows the worker and its state, recent jobs and live charts', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    // A few more jobs, for the charts and percentiles.
    for (const sleepMs of [100, 200, 300, 400, 500, 600]) await fleet.run(endpointId, { sleepMs });
    const worker = page.locator('tr[data-worker-id]');
    await worker.first().waitFor({ timeout: 20_000 });
    await page.locator('tr[data-worker-id][data-state="idle"]').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.getByRole('img', { name: /^Queue depth:/ }).count()).toBe(1);
    await page.waitForTimeout(4500); // a few more points on the charts
    await shot('endpoint-overview');

    await page.getByRole('link', { name: 'Jobs' }).click();
    const rows = page.locator('tr[data-job-id]');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(2);
    await page.getByRole('cell', { name: 'completed' }).first().waitFor();
    await page.locator('tr[data-job-id]', { hasText: 'completed' }).getByRole('button').first().click();
    await page.getByRole('heading', { name: /^Job / }).waitFor();
    await shot('endpoint-jobs');

    await go('/endpoints');
    const row = page.locator(`tr[data-endpoint-id="${endpointId}"]`);
    await row.waitFor();
    await expect.poll(() => row.textContent()).toContain('1 idle');
    await shot('endpoints');
  });

  it('follows the worker logs', async () => {
    await go(`/endpoints/${endpointId}/logs`);
    const log = page.getByRole('log', { name: 'Worker output' });
    await expect.poll(() => log.locator('li:not(.muted)').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    const before = await log.locator('li:not(.muted)').count();
    // A new job's lines arrive while following, without a reload.
    await fleet.run(endpointId, { progress: true });
    await expect.poll(() => log.locator('li:not(.muted)').count(), { timeout: 15_000 }).toBeGreaterThan(before);
    await shot('endpoint-logs');
  });

  it('edits a setting; a bad value is refused before sending', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    const form = page.getByRole('form', { name: 'Save settings' });
    await form.getByLabel('Minimum workers').fill('3');
    await form.getByLabel('Maximum workers').fill('2');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => form.textContent()).toContain('Minimum workers cannot be more than maximum workers.');

    await form.getByLabel('Minimum workers').fill('0');
    await form.getByLabel('Scaler value').fill('2');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    const after = await fleet.api('GET', `/v1/endpoints/${endpointId}`);
    expect(after.json).toMatchObject({ workersMin: 0, workersMax: 2, scalerValue: 2 });
    // The form shows what was saved.
    expect(await form.getByLabel('Maximum workers').inputValue()).toBe('2');
    await shot('endpoint-settings');
  });

  it('manages volumes, registry credentials and secrets (write-only values) and keys; shows billing', async () => {
    await go('/volumes');
    await page.getByLabel('Name', { exact: true }).fill('models');
    await page.getByLabel('Size (GB)').fill('50');
    await page.getByRole('button', { name: 'Create volume' }).click();
    await page.getByRole('cell', { name: '50 GB' }).waitFor();
    await shot('volumes');

    await go('/registry');
    await page.getByLabel('Name', { exact: true }).fill('ghcr');
    await page.getByLabel('User name').fill('octocat');
    await page.getByLabel('Password or token').fill('s3cret-token');
    await page.getByRole('button', { name: 'Store credentials' }).click();
    await page.getByRole('rowheader', { name: 'ghcr' }).waitFor();
    expect(await page.getByLabel('Password or token').inputValue()).toBe('');
    expect(await page.content()).not.toContain('s3cret-token');
    await shot('registry');

    await go('/secrets');
    await page.getByLabel('Name', { exact: true }).fill('hf_token');
    await page.getByLabel('Value').fill('hf_v4lue');
    await page.getByLabel('Description').fill('Hugging Face');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await page.getByRole('rowheader', { name: 'hf_token' }).waitFor();
    expect(await page.getByLabel('Value').inputValue()).toBe('');
    expect(await page.content()).not.toContain('hf_v4lue');
    // A second one of the same name: the server's refusal, shown on the form.
    await page.getByLabel('Name', { exact: true }).fill('hf_token');
    await page.getByLabel('Value').fill('other');
    await page.getByRole('button', { name: 'Store secret' }).click();
    await alert().filter({ hasText: 'hf_token' }).first().waitFor();
    await page
      .getByRole('row', { name: /hf_token/ })
      .getByRole('button', { name: 'Delete' })
      .click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('No secrets yet.').waitFor();

    await go('/keys');
    await page.getByLabel('Name', { exact: true }).fill('ci');
    await page.getByLabel('Scope').selectOption('read');
    await page.getByRole('button', { name: 'Create key' }).click();
    const newKey = await page.getByLabel('New API key').inputValue();
    expect(newKey).toMatch(/^wharf_/);
    await page.getByRole('rowheader', { name: 'ci' }).waitFor();
    await shot('keys');

    await go('/billing');
    await page.getByRole('img', { name: /^Worker cost per hour/ }).waitFor();
    await page.getByRole('rowheader', { name: 'console-e2e' }).waitFor();
    await shot('billing');
  });

  it('detaches a network volume (unchecked), after which the volume can be deleted', async () => {
    const volume = (
      await fleet.api('POST', '/v1/networkvolumes', { name: 'scratch', size: 5, dataCenterId: 'EU-RO-1' })
    ).json.id;
    const id = await fleet.endpoint({ name: 'with-volume', workersMax: 0, networkVolumeId: volume });
    const form = await settings(id);
    const box = form.getByRole('checkbox', { name: /^scratch / });
    expect(await box.isChecked()).toBe(true);
    await box.uncheck();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(async () => (await endpointJson(id)).networkVolumeId ?? null).toBeNull();
    // Saved again as it is: no volume on either side, nothing to send.
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();
    expect((await fleet.api('DELETE', `/v1/networkvolumes/${volume}`)).status).toBe(204);
  });

  it('shows and edits every volume attached through networkVolumeIds; an untouched form sends nothing', async () => {
    const make = async (name: string): Promise<string> =>
      (await fleet.api('POST', '/v1/networkvolumes', { name, size: 5, dataCenterId: 'EU-RO-1' })).json.id;
    const [a, b, c] = [await make('vol-a'), await make('vol-b'), await make('vol-c')];
    // As the API and GraphQL attach several: networkVolumeId is left empty.
    const id = await fleet.endpoint({ name: 'with-volumes', workersMax: 0, networkVolumeIds: [a, b] });
    /** Every volume the endpoint has, in the order the supervisor looks at them (it mounts the first). */
    const attached = async () => {
      const e = await endpointJson(id);
      return [...new Set([e.networkVolumeId, ...e.networkVolumeIds].filter(Boolean))];
    };
    const box = (form: Locator, name: string) => form.getByRole('checkbox', { name: new RegExp(`^${name} `) });
    let form = await settings(id);
    expect(await box(form, 'vol-a').isChecked()).toBe(true);
    expect(await box(form, 'vol-b').isChecked()).toBe(true);
    expect(await box(form, 'vol-c').isChecked()).toBe(false);
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();

    // Detach one of the two: the other stays.
    await box(form, 'vol-b').uncheck();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(attached).toEqual([a]);
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    form = await settings(id);
    expect(await box(form, 'vol-a').isChecked()).toBe(true);
    expect(await box(form, 'vol-b').isChecked()).toBe(false);

    // Swap it for another, then detach everything: nothing is left attached behind the form's back.
    await box(form, 'vol-a').uncheck();
    await box(form, 'vol-c').check();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(attached).toEqual([c]);
    form = await settings(id);
    await box(form, 'vol-c').uncheck();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(attached).toEqual([]);

    // One in each field: both shown, and the hint names the one workers mount (networkVolumeId's).
    await fleet.api('PATCH', `/v1/endpoints/${id}`, { networkVolumeId: a, networkVolumeIds: [b] });
    form = await settings(id);
    expect(await box(form, 'vol-a').isChecked()).toBe(true);
    expect(await box(form, 'vol-b').isChecked()).toBe(true);
    expect(await form.textContent()).toContain('Workers mount only the first attached: vol-a.');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();
    await box(form, 'vol-a').uncheck();
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(attached).toEqual([b]);
    await fleet.api('PATCH', `/v1/endpoints/${id}`, { networkVolumeId: '', networkVolumeIds: [] });
    for (const v of [a, b, c]) expect((await fleet.api('DELETE', `/v1/networkvolumes/${v}`)).status).toBe(204);
  });

  it('removes the registry credentials of a template (None), after which they can be deleted', async () => {
    const auth = (
      await fleet.api('POST', '/v1/containerregistryauth', { name: 'private', username: 'u', password: 'p' })
    ).json.id;
    const template = (
      await fleet.api('POST', '/v1/templates', {
        name: 'private-image',
        imageName: 'ghcr.io/acme/private:1',
        containerRegistryAuthId: auth,
      })
    ).json.id;
    await go('/templates');
    await page.getByRole('button', { name: 'Edit private-image' }).click();
    const form = page.getByRole('form', { name: 'Edit private-image' });
    expect(await form.getByLabel('Registry credentials').inputValue()).toBe(auth);
    await form.getByLabel('Registry credentials').selectOption({ label: 'None' });
    await form.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Template private-image saved.' }).waitFor();
    expect((await fleet.api('GET', `/v1/templates/${template}`)).json.containerRegistryAuthId).toBeFalsy();
    expect((await fleet.api('DELETE', `/v1/containerregistryauth/${auth}`)).status).toBe(204);

    // A template that had none, saved as it is, is not changed: its endpoints' workers are not rolled.
    const version = (await endpointJson(endpointId)).version;
    await page.getByRole('button', { name: 'Edit echo-ts' }).click();
    await page.getByRole('form', { name: 'Edit echo-ts' }).getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Template echo-ts saved.' }).waitFor();
    expect((await endpointJson(endpointId)).version).toBe(version);
  });

  it('saves a GPU endpoint that takes any GPU type (none checked)', async () => {
    const id = await fleet.endpoint({ name: 'any-gpu', computeType: 'GPU', gpuTypeIds: [], workersMax: 0 });
    const form = await settings(id);
    await form.getByLabel('Scaler value').fill('7');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    expect(await endpointJson(id)).toMatchObject({ computeType: 'GPU', gpuTypeIds: [], scalerValue: 7 });
    expect(await form.textContent()).toContain('None checked: any type.');
  });

  /** A CUDA version's checkbox in an endpoint form. */
  const cudaBox = (form: Locator, version: string) =>
    form.getByRole('group', { name: 'Allowed CUDA versions' }).getByRole('checkbox', { name: version, exact: true });

  it("shows and edits a GPU endpoint's CUDA versions; saving other settings keeps them", async () => {
    const id = await fleet.endpoint({
      name: 'cuda-limits',
      computeType: 'GPU',
      workersMax: 0,
      allowedCudaVersions: ['12.8', '12.4'],
      minCudaVersion: '12.1',
    });
    const cuda = async () => {
      const e = await endpointJson(id);
      return { allowed: [...(e.allowedCudaVersions as string[])].sort(), min: e.minCudaVersion ?? null };
    };
    const save = async (form: Locator) => form.getByRole('button', { name: 'Save settings' }).click();
    let form = await settings(id);
    expect(await cudaBox(form, '12.8').isChecked()).toBe(true);
    expect(await cudaBox(form, '12.4').isChecked()).toBe(true);
    expect(await cudaBox(form, '13.0').isChecked()).toBe(false);
    expect(await form.getByLabel('Minimum CUDA version').inputValue()).toBe('12.1');
    await save(form);
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();

    // Another setting changed: the CUDA limits are not sent, and stay.
    await form.getByLabel('Scaler value').fill('5');
    await save(form);
    await expect.poll(async () => (await endpointJson(id)).scalerValue).toBe(5);
    expect(await cuda()).toEqual({ allowed: ['12.4', '12.8'], min: '12.1' });

    form = await settings(id);
    await cudaBox(form, '12.4').uncheck();
    await cudaBox(form, '13.0').check();
    await form.getByLabel('Minimum CUDA version').selectOption('12.4');
    await save(form);
    await expect.poll(cuda).toEqual({ allowed: ['12.8', '13.0'], min: '12.4' });

    // "Any" takes the minimum off (null); none checked allows any version.
    form = await settings(id);
    await form.getByLabel('Minimum CUDA version').selectOption({ label: 'Any' });
    await cudaBox(form, '12.8').uncheck();
    await cudaBox(form, '13.0').uncheck();
    await save(form);
    await expect.poll(cuda).toEqual({ allowed: [], min: null });
    form = await settings(id);
    expect(await form.textContent()).toContain('None checked: any version.');
    expect(await form.getByLabel('Minimum CUDA version').inputValue()).toBe('');
    await save(form);
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();
  });

  it('creates a GPU endpoint with the CUDA versions checked and any minimum', async () => {
    await go('/endpoints/new');
    const form = page.getByRole('form', { name: 'Create endpoint' });
    await form.getByLabel('Name', { exact: true }).fill('cuda-new');
    await form.getByRole('radio', { name: 'GPU' }).check();
    await form.getByLabel('Maximum workers').fill('0');
    await cudaBox(form, '12.8').check();
    await form.getByRole('button', { name: 'Create endpoint' }).click();
    await page.getByRole('heading', { name: /cuda-new/, level: 1 }).waitFor();
    const id = /\/console\/endpoints\/([^/]+)/.exec(page.url())![1]!;
    const created = await endpointJson(id);
    expect(created).toMatchObject({ computeType: 'GPU', allowedCudaVersions: ['12.8'] });
    expect(created.minCudaVersion).toBeUndefined();
  });

  it('keeps an execution timeout that is not whole seconds, and takes one with decimals', async () => {
    const id = await fleet.endpoint({ name: 'odd-timeout', workersMax: 0, executionTimeoutMs: 90_500 });
    const form = await settings(id);
    const timeout = form.getByLabel('Execution timeout (s)');
    expect(await timeout.inputValue()).toBe('90.5');
    await form.getByLabel('Scaler value').fill('6');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    expect(await endpointJson(id)).toMatchObject({ executionTimeoutMs: 90_500, scalerValue: 6 });

    await timeout.fill('0.0005');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => timeout.getAttribute('aria-invalid')).toBe('true');
    await timeout.fill('120.25');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(async () => (await endpointJson(id)).executionTimeoutMs).toBe(120_250);
  });

  it('shows the template made for an endpoint (GraphQL inline template) in its settings', async () => {
    const inline = `template: {name: "inline-tpl", imageName: "${ECHO_TEMPLATE.imageName}", containerDiskInGb: 5, dockerArgs: "", env: []}`;
    const res = await gql(
      fleet.url,
      fleet.key,
      `mutation { saveEndpoint(input: {name: "inline", workersMax: 0, ${inline}}) { id templateId } }`,
    );
    const { id, templateId } = res.json.data.saveEndpoint as { id: string; templateId: string };
    const form = await settings(id);
    expect(await form.getByLabel('Template').inputValue()).toBe(templateId);
    expect(await form.getByLabel('Template').locator('option:checked').textContent()).toContain('inline-tpl');
  });

  it('bills endpoints that share a name apart', async () => {
    const twins = [await fleet.endpoint({ name: 'twin' }), await fleet.endpoint({ name: 'twin' })];
    await Promise.all(twins.map(async (ep) => fleet.waitJob(ep, await fleet.run(ep, {}))));
    await go('/billing');
    await page.getByRole('img', { name: /^Worker cost per hour/ }).waitFor();
    await expect.poll(() => page.getByRole('rowheader', { name: /^twin/ }).count()).toBe(2);
  });

  it('works on a narrow screen and with the keyboard', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await go('/endpoints');
    await page.locator(`tr[data-endpoint-id="${endpointId}"]`).waitFor();
    // The menu folds behind a button; Tab reaches it after the skip link and the brand.
    const menu = page.getByRole('button', { name: 'Menu' });
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await menu.focus();
    await page.keyboard.press('Enter');
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await shot('narrow-menu');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await go('/endpoints');
    await page.locator(`tr[data-endpoint-id="${endpointId}"]`).waitFor();
    await shot('narrow-endpoints');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('shows the server message instead of a blank page, and signs out', async () => {
    await go('/endpoints/no-such-endpoint');
    await expect.poll(() => alert().first().textContent()).toContain('Endpoint no-such-endpoint not found');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('wharf.console.apiKey'))).toBeNull();
    // Nothing went wrong in the page itself (failed requests the tests caused are not page errors).
    expect(browser!.errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
  });
});
