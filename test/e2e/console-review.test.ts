// The web console as a new user meets it, for what console.test.ts does not walk through: the names of the buttons
// in each row, what the settings form shows of an endpoint, and how a failed job reads. One server (process
// executor, examples/echo-ts) and one Chromium for the whole file, as console.test.ts does; skipped without
// /usr/bin/chromium.

import { type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DATA_CENTER_IDS } from '../../src/domain/resources.ts';
import {
  CHROMIUM,
  ensureConsoleBuilt,
  HAS_CHROMIUM,
  launchConsoleBrowser,
  type ConsoleBrowser,
} from '../helpers/console.ts';
import { closeFleet, startFleet, type Fleet } from '../helpers/fleet.ts';
import { ROOT } from '../helpers/processes.ts';

if (!HAS_CHROMIUM) {
  process.stdout.write(`skipping the console review tests: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);
}

describe.skipIf(!HAS_CHROMIUM)('web console, as a new user', () => {
  let fleet: Fleet;
  let context: BrowserContext;
  let page: Page;
  let browser: ConsoleBrowser | undefined;
  const go = (path: string) => page.goto(`${fleet.url}/console${path}`);

  beforeAll(async () => {
    ensureConsoleBuilt();
    fleet = await startFleet();
    browser = await launchConsoleBrowser();
    ({ context, page } = browser);
    await go('/');
    await page.getByLabel('API key').fill(fleet.key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Endpoints', level: 1 }).waitFor();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (fleet) await closeFleet(fleet);
  }, 30_000);

  it("names each row's Delete and Revoke button after its row, as it does Edit", async () => {
    for (const name of ['alpha', 'beta']) {
      expect(
        (await fleet.api('POST', '/v1/networkvolumes', { name, size: 5, dataCenterId: DATA_CENTER_IDS[0] })).status,
      ).toBeLessThan(300);
      const auth = await fleet.api('POST', '/v1/containerregistryauth', { name, username: 'u', password: 'p' });
      expect(auth.status).toBeLessThan(300);
      const tpl = await fleet.api('POST', '/v1/templates', { name, imageName: `file://${ROOT}/examples/echo-ts` });
      expect(tpl.status).toBeLessThan(300);
      expect((await fleet.api('POST', '/v1/keys', { name, scope: 'read' })).status).toBeLessThan(300);
    }
    // A screen reader's list of buttons (or a voice command) tells the rows apart only by these names.
    for (const [path, verb] of [
      ['/volumes', 'Delete'],
      ['/registry', 'Delete'],
      ['/templates', 'Delete'],
      ['/keys', 'Revoke'],
    ] as const) {
      await go(path);
      for (const name of ['alpha', 'beta']) {
        const button = page.getByRole('button', { name: `${verb} ${name}`, exact: true });
        await button.waitFor();
        await button.click();
        // The second step names it too, and moving focus to it reads what is about to go.
        await expect
          .poll(() => page.getByRole('button', { name: `Yes, ${verb.toLowerCase()} ${name}` }).count())
          .toBe(1);
        await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      }
    }
    expect(browser!.errors).toEqual([]);
  });
  it('keeps env values as they are (spaces at the end too) when a form saves something else', async () => {
    // Spaces are part of a value (a separator, a padded token); the form used to trim each NAME=value line, so any
    // save of the endpoint sent its env back without them, changed it and rolled its workers.
    const env = { PAD: 'x  ', LEAD: ' y', TAB: 'z\t' };
    const id = await fleet.endpoint({ env, workersMax: 1 }, { name: 'padded-env', env });
    await go(`/endpoints/${id}/settings`);
    const form = page.getByRole('form', { name: 'Save settings' });
    await form.waitFor();
    await form.getByLabel('Maximum workers').fill('2');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    const endpoint = (await fleet.api('GET', `/v1/endpoints/${id}`)).json as { env: unknown; workersMax: number };
    expect(endpoint.workersMax).toBe(2);
    expect(endpoint.env).toEqual(env);

    const templateId = (endpoint as unknown as { templateId: string }).templateId;
    await go('/templates');
    await page.getByRole('button', { name: 'Edit padded-env', exact: true }).click();
    const tform = page.getByRole('form', { name: 'Edit padded-env' });
    await tform.getByLabel('Container disk (GB)').fill('20');
    await tform.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Template padded-env saved.' }).waitFor();
    const template = (await fleet.api('GET', `/v1/templates/${templateId}`)).json as {
      env: unknown;
      containerDiskInGb: number;
    };
    expect(template.containerDiskInGb).toBe(20);
    expect(template.env).toEqual(env);
  });
  it("shows a CPU endpoint's vCPU count in its settings", async () => {
    const id = await fleet.endpoint({ vcpuCount: 4 });
    await go(`/endpoints/${id}/settings`);
    const form = page.getByRole('form', { name: 'Save settings' });
    await form.waitFor();
    expect(await form.getByLabel('vCPUs per worker').inputValue()).toBe('4');
    // Shown, and so not sent again by a save of another field.
    await form.getByLabel('Idle timeout (s)').fill('7');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    const endpoint = (await fleet.api('GET', `/v1/endpoints/${id}`)).json as { vcpuCount: number; idleTimeout: number };
    expect(endpoint).toMatchObject({ vcpuCount: 4, idleTimeout: 7 });
  });
  it("shows a failed job's error message, and its traceback line by line, in the run panel and the job view", async () => {
    const id = await fleet.endpoint();
    await go(`/endpoints/${id}/run`);
    await page.getByLabel('Input (JSON)').fill('{"fail": "boom <b>bold</b>"}');
    await page.getByRole('button', { name: 'Run' }).click();
    const run = page.locator('.run-result');
    await run.getByText(/^failed$/i).waitFor({ timeout: 30_000 });
    // The handler's message as text (not the JSON the worker reported, nor HTML), then its traceback as lines.
    expect(await run.locator('.output-error').innerText()).toBe('boom <b>bold</b>');
    await run.getByText('Traceback').click();
    const runTrace = await run.getByTestId('traceback').innerText();
    expect(runTrace.split('\n')[0]).toBe('Error: boom <b>bold</b>');
    expect(runTrace).toMatch(/\n\s+at handler/);

    await go(`/endpoints/${id}/jobs`);
    const row = page.locator('tr', { hasText: /failed/i }).first();
    await row.locator('button.link').click();
    const detail = page.locator('.job-detail');
    await detail.getByText(/^failed$/i).waitFor();
    expect(await detail.locator('.output-error').innerText()).toBe('boom <b>bold</b>');
    await detail.getByText('Traceback').click();
    expect(await detail.getByTestId('traceback').innerText()).toBe(runTrace);
    expect(browser!.errors).toEqual([]);
  }, 60_000);
  it('titles the page-not-found page as such, also when reached by a link from another page', async () => {
    await go('/keys');
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    // A client-side navigation (a stale bookmark in the app's history, a mistyped link) to no console page.
    await page.evaluate(() => {
      window.history.pushState(null, '', '/console/no-such-page');
      window.dispatchEvent(new PopStateEvent('popstate'));
    });
    await page.getByRole('heading', { name: 'Page not found', level: 1 }).waitFor();
    expect(await page.title()).toBe('Page not found · Wharf console');
  });
  it('saves other settings of an endpoint or template whose env has a value of several lines', async () => {
    // The API and the CLI take any string (a PEM certificate, a JSON document); the env box shows it over several
    // lines, which its NAME=value check then refused: no other field could be saved.
    const env = { CERT: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----', PLAIN: 'x' };
    const id = await fleet.endpoint({ env }, { name: 'multiline-env', env });
    await go(`/endpoints/${id}/settings`);
    const form = page.getByRole('form', { name: 'Save settings' });
    await form.waitFor();
    await form.getByLabel('Maximum workers').fill('3');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    const endpoint = (await fleet.api('GET', `/v1/endpoints/${id}`)).json as {
      env: unknown;
      workersMax: number;
      templateId: string;
    };
    expect(endpoint.workersMax).toBe(3);
    expect(endpoint.env).toEqual(env);

    await go('/templates');
    await page.getByRole('button', { name: 'Edit multiline-env', exact: true }).click();
    const tform = page.getByRole('form', { name: 'Edit multiline-env' });
    await tform.getByLabel('Container disk (GB)').fill('30');
    await tform.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Template multiline-env saved.' }).waitFor();
    const template = (await fleet.api('GET', `/v1/templates/${endpoint.templateId}`)).json as {
      env: unknown;
      containerDiskInGb: number;
    };
    expect(template.containerDiskInGb).toBe(30);
    expect(template.env).toEqual(env);
  });
  it('shows a worker cost of a fraction of a cent as what it is, not as $0.0000', async () => {
    // A worker that starts, runs one job and stops after its 1 s idle timeout costs a few hundred-thousandths of a
    // dollar on a CPU flavor: money() rounded that to 4 decimals, and the table read as if it were free.
    const id = await fleet.endpoint({ name: 'tiny-bill', idleTimeout: 1 });
    await fleet.waitJob(id, await fleet.run(id, { hello: 1 }));
    const startTime = new Date(Date.now() - 3600_000).toISOString();
    const billed = async () => {
      const res = await fleet.api(
        'GET',
        `/v1/billing/endpoints?bucketSize=hour&grouping=endpointId&startTime=${startTime}`,
      );
      const records = res.json as { endpointId?: string; amount: number }[];
      return records.filter((r) => r.endpointId === id).reduce((a, r) => a + r.amount, 0);
    };
    // The worker stops and its time is billed.
    await expect.poll(async () => (await fleet.workers(id)).length, { timeout: 20_000 }).toBe(0);
    await expect.poll(billed, { timeout: 20_000 }).toBeGreaterThan(0);
    const total = await billed();
    await go('/billing');
    const cell = page
      .getByRole('row', { name: /tiny-bill/ })
      .getByRole('cell')
      .last();
    await cell.waitFor();
    const shown = await cell.innerText();
    expect(shown).toMatch(/^\$0\.0*[1-9]\d{0,2}$/);
    // Two significant digits of the same amount.
    expect(Math.abs(Number(shown.slice(1)) - total) / total).toBeLessThan(0.05);
  }, 60_000);
  it('names the endpoint table, as the other pages name theirs', async () => {
    await fleet.endpoint({ name: 'named-table' });
    await go('/endpoints');
    await page
      .getByRole('table', { name: 'Endpoints', exact: true })
      .getByRole('link', { name: 'named-table' })
      .waitFor();
  });
  it("ties a volume edit's empty name error to the name field, not to the size", async () => {
    expect(
      (await fleet.api('POST', '/v1/networkvolumes', { name: 'rename-me', size: 5, dataCenterId: DATA_CENTER_IDS[0] }))
        .status,
    ).toBeLessThan(300);
    await go('/volumes');
    await page.getByRole('button', { name: 'Edit rename-me', exact: true }).click();
    const form = page.getByRole('form', { name: 'Edit volume rename-me' });
    await form.getByLabel('Name').fill('');
    await form.getByRole('button', { name: 'Save volume' }).click();
    const name = form.getByLabel('Name');
    await expect.poll(() => name.getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('Size (GB)').getAttribute('aria-invalid')).toBeNull();
    const describedBy = (await name.getAttribute('aria-describedby')) ?? '';
    const said = await page.evaluate(
      (ids) => ids.map((id) => document.getElementById(id)?.textContent ?? '').join(' '),
      describedBy.split(' ').filter(Boolean),
    );
    expect(said).toContain('Enter a name.');
  });
  it('moves focus to the first bad field of every form that fails its check', async () => {
    for (const [path, submit] of [
      ['/volumes', 'Create volume'],
      ['/registry', 'Store credentials'],
      ['/secrets', 'Store secret'],
      ['/keys', 'Create key'],
    ] as const) {
      await go(path);
      await page.getByRole('button', { name: submit }).click();
      await expect
        .poll(() => page.evaluate(() => `${document.activeElement?.getAttribute('name')}`), { timeout: 2000 })
        .toBe('name');
    }
    // The sign-in form, in a tab of its own (not signed in).
    const other = await context.newPage();
    await other.goto(`${fleet.url}/console/`);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => other.evaluate(() => `${document.activeElement?.getAttribute('name')}`)).toBe('apiKey');
    await other.close();

    await go('/volumes');
    await page
      .getByRole('button', { name: /^Edit / })
      .first()
      .click();
    const form = page.getByRole('form', { name: /^Edit volume/ });
    await form.getByLabel('Size (GB)').fill('1');
    await form.getByRole('button', { name: 'Save volume' }).click();
    await expect.poll(() => page.evaluate(() => `${document.activeElement?.getAttribute('name')}`)).toBe('size');
  });
  it("keeps a template's start command as it is when the form saves something else", async () => {
    // Arguments are passed as they are: one with spaces at its ends, or an empty one, is a different command.
    const dockerStartCmd = ['node', 'worker.ts', ' --sep= ', ''];
    const tpl = await fleet.api('POST', '/v1/templates', {
      name: 'args-as-given',
      imageName: `file://${ROOT}/examples/echo-ts`,
      dockerStartCmd,
    });
    expect(tpl.status).toBeLessThan(300);
    await go('/templates');
    await page.getByRole('button', { name: 'Edit args-as-given', exact: true }).click();
    const form = page.getByRole('form', { name: 'Edit args-as-given' });
    await form.getByLabel('Container disk (GB)').fill('25');
    await form.getByRole('button', { name: 'Save template' }).click();
    await page.getByRole('status').filter({ hasText: 'Template args-as-given saved.' }).waitFor();
    const template = (await fleet.api('GET', `/v1/templates/${(tpl.json as { id: string }).id}`)).json as {
      dockerStartCmd: string[];
      containerDiskInGb: number;
    };
    expect(template.containerDiskInGb).toBe(25);
    expect(template.dockerStartCmd).toEqual(dockerStartCmd);
  });
  it('keeps the API key out of the password manager: the sign-in field does not autocomplete', async () => {
    // docs/console.md promises the key stays in this tab only; autocomplete="current-password" invited the browser
    // to offer saving it with the passwords.
    const other = await context.newPage();
    await other.goto(`${fleet.url}/console/`);
    const field = other.getByLabel('API key');
    await field.waitFor();
    expect(await field.getAttribute('autocomplete')).toBe('off');
    expect(await field.getAttribute('type')).toBe('password');
    await other.close();
  });
  it('purges the queue of an endpoint from its page and shows how many jobs went', async () => {
    // No worker may start (workersMax 0): the jobs stay queued.
    const id = await fleet.endpoint({ name: 'purge-me', workersMax: 0 });
    for (let i = 0; i < 3; i++) await fleet.run(id, { n: i });
    await go(`/endpoints/${id}`);
    const inQueue = page.locator('.stat', { hasText: 'In queue' }).locator('dd');
    await expect.poll(() => inQueue.innerText()).toBe('3');
    await page.getByRole('button', { name: 'Purge queue', exact: true }).click();
    await page.getByRole('button', { name: 'Yes, purge queue', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Purged 3 queued jobs.' }).waitFor();
    await expect.poll(() => inQueue.innerText()).toBe('0');
    const health = (await fleet.api('GET', `/v2/${id}/health`)).json as { jobs: { inQueue: number } };
    expect(health.jobs.inQueue).toBe(0);
    expect(browser!.errors).toEqual([]);
  });
  it('keeps following a sync job that /runsync answered before it finished, with Cancel enabled', async () => {
    // /runsync answers with the job still running once its wait is over (at most 300 s): the panel showed that
    // status for good, with Cancel disabled. A 1 s wait reaches the same point without waiting minutes.
    const id = await fleet.endpoint({ name: 'long-sync' });
    await go(`/endpoints/${id}/run`);
    await page.getByLabel('Sync (/runsync)').check();
    await page.getByText('Options').click();
    await page.getByLabel('Server wait (s)').fill('1');
    const input = page.getByLabel('Input (JSON)');
    const run = page.locator('.run-result');
    const cancel = page.getByRole('button', { name: 'Cancel job' });

    await input.fill('{"sleepMs": 5000}');
    await page.getByRole('button', { name: 'Run' }).click();
    await run.getByText(/^in (queue|progress)$/i).waitFor({ timeout: 15_000 });
    expect(await run.locator('.mono').innerText()).toMatch(/\S/);
    expect(await cancel.isEnabled()).toBe(true);
    await run.getByText(/^completed$/i).waitFor({ timeout: 30_000 });
    expect(JSON.parse(await run.getByTestId('output').innerText())).toEqual({ echo: { sleepMs: 5000 } });
    await expect.poll(() => cancel.isEnabled()).toBe(false);

    // A job cancelled while the panel follows it ends as CANCELLED, and the panel stops.
    await input.fill('{"sleepMs": 60000}');
    await page.getByRole('button', { name: 'Run' }).click();
    await run.getByText(/^in (queue|progress)$/i).waitFor({ timeout: 15_000 });
    await cancel.click();
    await page.getByRole('status').filter({ hasText: 'Cancel sent' }).waitFor();
    await run.getByText(/^cancelled$/i).waitFor({ timeout: 15_000 });
    await expect.poll(() => page.getByRole('button', { name: 'Run' }).isEnabled()).toBe(true);
    expect(browser!.errors).toEqual([]);
  }, 90_000);
});
