import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSealed, SecretBox, SecretUnreadableError } from '../../src/engine/index.ts';

// SecretBox's marked text (secrets at rest in text columns that earlier versions filled in plain text).
describe('SecretBox sealText / openText', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, for the same record only; the sealed text holds nothing of the value', () => {
    const sealed = box.sealText('{"accessSecret":"s3cr3t"}', 's3Config/job-1');
    expect(isSealed(sealed)).toBe(true);
    expect(sealed).not.toContain('s3cr3t');
    expect(box.sealText('{"accessSecret":"s3cr3t"}', 's3Config/job-1')).not.toBe(sealed);
    expect(box.openText(sealed, 's3Config/job-1', 'job 1')).toBe('{"accessSecret":"s3cr3t"}');
    // Copied onto another record: refused, naming the record it was read for.
    expect(() => box.openText(sealed, 's3Config/job-2', 'the s3Config of job 2')).toThrow(SecretUnreadableError);
    expect(() => box.openText(sealed, 's3Config/job-2', 'the s3Config of job 2')).toThrow(/^the s3Config of job 2/);
  });

  it('another key: a SecretUnreadableError (SECRET_UNREADABLE), never the value', () => {
    const sealed = box.sealText('whsec_abc', 'webhookSecret/u1');
    const other = new SecretBox(randomBytes(32));
    let thrown: unknown;
    try {
      other.openText(sealed, 'webhookSecret/u1', 'the webhook secret of user u1');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SecretUnreadableError);
    expect(thrown).toMatchObject({ code: 'SECRET_UNREADABLE', status: 500 });
    expect((thrown as Error).message).toMatch(/the webhook secret of user u1 cannot be decrypted .*secret key/);
    expect((thrown as Error).message).not.toContain('whsec_abc');
  });

  it('plain text of earlier versions is told apart and read as it is', () => {
    for (const legacy of ['{"accessId":"a"}', 'whsec_plain']) {
      expect(isSealed(legacy)).toBe(false);
      expect(box.openText(legacy, 'any', 'any')).toBe(legacy);
    }
  });

  it('seal / open (registry credentials): another key or record gives the same clear error', () => {
    const sealed = box.seal('{"password":"hunter2"}', 'u1/auth1');
    expect(box.open(sealed, 'u1/auth1', 'x')).toBe('{"password":"hunter2"}');
    const other = new SecretBox(randomBytes(32));
    for (const attempt of [
      () => other.open(sealed, 'u1/auth1', 'auth1'),
      () => box.open(sealed, 'u2/auth1', 'auth1'),
    ]) {
      expect(attempt).toThrow(SecretUnreadableError);
      expect(attempt).toThrow(/^auth1 cannot be decrypted/);
    }
  });
});
