// The server's own checks of --store (src/cli/preflight.ts): a store URL it cannot use is refused by name, without
// the database password the URL may carry (the refusal goes to stderr, and from there to the service's log).

import { describe, expect, it } from 'vitest';

import { checkServerConfig } from '../../src/cli/preflight.ts';
import { ConfigError, loadConfig } from '../../src/config/index.ts';

function refusal(store: string): string {
  try {
    checkServerConfig(loadConfig({ argv: ['--store', store], env: {} }));
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error(`--store ${store} was accepted`);
}

describe('--store refused', () => {
  it('names the URL it got without its password', () => {
    const message = refusal('postgress://wharf:hunter2-S3cret@db.internal:5432/wharf');
    expect(message).toContain(
      "must be sqlite or a postgres:// URL, got 'postgress://wharf:***@db.internal:5432/wharf'",
    );
    expect(message).not.toContain('hunter2');
  });

  it('masks a password holding @ or / whole, and leaves a URL without one as it is', () => {
    const message = refusal('mysql://root:p@ss/w@rd@db/wharf');
    expect(message).toContain("got 'mysql://root:***@db/wharf'");
    expect(message).not.toMatch(/p@ss|w@rd/);
    expect(refusal('mysql://db/wharf')).toContain("got 'mysql://db/wharf'");
  });
});
