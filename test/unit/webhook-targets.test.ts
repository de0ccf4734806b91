import { describe, expect, it } from 'vitest';

import {
  blockedPort,
  isPrivateAddress,
  mayReachPrivate,
  privateLiteral,
  PrivateTargetError,
  publicOnlyLookup,
} from '../../src/webhooks/targets.ts';

describe('isPrivateAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '[::1]',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1', // the same, as URL parsing writes it
    '::ffff:a00:1', // 10.0.0.1
    '64:ff9b::10.0.0.1',
    '64:ff9b::a9fe:a9fe', // NAT64 to 169.254.169.254, as URL parsing and DNS write it
    '::7f00:1', // IPv4-compatible ::127.0.0.1
    '::ffff:0:7f00:1', // IPv4-translated
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
    'fec0::1',
  ])('%s is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:808:808'])(
    '%s is public',
    (address) => {
      expect(isPrivateAddress(address)).toBe(false);
    },
  );

  it('is false for a host name (names are checked when resolved)', () => {
    expect(isPrivateAddress('example.com')).toBe(false);
  });
});

describe('privateLiteral', () => {
  it('names IP literals in any spelling URL parsing accepts, and localhost', () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://2130706433/', // 127.0.0.1 as one number
      'http://0x7f.1/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'https://localhost/',
      'http://LOCALHOST:3000/',
      'http://app.localhost/',
      'http://localhost./',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::127.0.0.1]/',
      'http://[64:ff9b::169.254.169.254]/',
    ]) {
      expect(privateLiteral(new URL(url), true), url).not.toBeNull();
    }
    for (const url of ['https://example.com/hook', 'http://8.8.8.8/', 'http://[2606:4700::1111]/']) {
      expect(privateLiteral(new URL(url), true), url).toBeNull();
    }
    // Without `names`, localhost is left to the lookup at connection time.
    expect(privateLiteral(new URL('http://localhost/'))).toBeNull();
    expect(privateLiteral(new URL('http://localhost./'), true)).not.toBeNull();
  });
});

describe('mayReachPrivate', () => {
  it('follows the policy', () => {
    expect(mayReachPrivate('admins', true)).toBe(true);
    expect(mayReachPrivate('admins', false)).toBe(false);
    expect(mayReachPrivate('all', false)).toBe(true);
    expect(mayReachPrivate('none', true)).toBe(false);
  });
});

describe('publicOnlyLookup', () => {
  const lookup = (host: string, all: boolean) =>
    new Promise<unknown>((resolve, reject) =>
      publicOnlyLookup(host, { all }, (error, address) => (error ? reject(error) : resolve(address))),
    );

  it('refuses a name that resolves to a private address, in both callback forms', async () => {
    await expect(lookup('localhost', true)).rejects.toBeInstanceOf(PrivateTargetError);
    await expect(lookup('localhost', false)).rejects.toThrow(/localhost resolves to a private/);
  });

  it('passes resolution errors through', async () => {
    await expect(lookup('no-such-host.invalid', false)).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('blockedPort', () => {
  it("refuses fetch's blocked ports (mail, shell, IRC …) and nothing else", () => {
    for (const url of ['http://example.com:25/', 'https://example.com:22/x', 'http://example.com:6667/']) {
      expect(blockedPort(new URL(url)), url).toMatch(/port \d+ is not a webhook receiver/);
    }
    for (const url of [
      'http://example.com/',
      'https://example.com:443/',
      'http://example.com:8080/',
      'http://x:3000/',
    ]) {
      expect(blockedPort(new URL(url)), url).toBeNull();
    }
  });
});
