/**
 * Store contract for the management verbs (store/types-volumes.ts): network volumes with their usage history,
 * registry auths, secrets, user settings and worker usage. Run inside storeContract, so every backend gets it.
 */
import { describe, expect, it } from 'vitest';
import type { NetworkVolume, RegistryAuthRecord, SecretRecord, UsageStart } from '../../src/domain/index.ts';
import { isUniqueViolation, type Store } from '../../src/store/index.ts';
import { endpoint, template } from './records.ts';

const T0 = 1_700_000_000_000;

const volume = (over: Partial<NetworkVolume> = {}): NetworkVolume => ({
  id: 'vol0000001',
  userId: 'u1',
  name: 'v',
  size: 10,
  dataCenterId: 'EU-RO-1',
  createdAt: T0,
  ...over,
});
const auth = (over: Partial<RegistryAuthRecord> = {}): RegistryAuthRecord => ({
  id: 'c000000000000000000000001',
  userId: 'u1',
  name: 'ghcr',
  sealed: 'opaque',
  createdAt: T0,
  ...over,
});
const secret = (over: Partial<SecretRecord> = {}): SecretRecord => ({
  id: 'c100000000000000000000001',
  userId: 'u1',
  name: 'hf',
  description: 'Hugging Face',
  sealed: 'opaque',
  createdAt: T0,
  ...over,
});
const usage = (over: Partial<UsageStart> = {}): UsageStart => ({
  workerId: 'w1',
  userId: 'u1',
  endpointId: 'ep1',
  templateId: 't1',
  imageName: 'img',
  gpuTypeId: 'NVIDIA A40',
  gpuCount: 1,
  cpuFlavorId: null,
  dataCenterId: 'EU-RO-1',
  startedAt: T0,
  ...over,
});

export function managementContract(store: () => Store): void {
  describe('management: users, volumes, registry auths, secrets, usage', () => {
    it('updates a user document (settings), never its webhook secret: a rotation after the read stays', async () => {
      const s = store();
      await s.createUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0 });
      const discount = { discountFactor: 0.5, type: 'SERVERLESS', expirationDate: '2030-01-01T00:00:00Z' };
      // A user without a secret gets none from a settings change, whatever the document says.
      await s.updateUser({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0, webhookSecret: 'x', pubKey: 'k' });
      expect(await s.getUser('u1')).toEqual({ id: 'u1', name: 'a', isAdmin: false, createdAt: T0, pubKey: 'k' });
      // Read (an admin setting a discount, a user setting a pubKey), then rotated by another request, then written:
      // the rotation is kept, not undone by the document read before it.
      await s.setWebhookSecret('u1', 'whsec_old');
      const read = (await s.getUser('u1'))!;
      await s.setWebhookSecret('u1', 'whsec_rotated');
      await s.updateUser({ ...read, serverlessDiscount: discount });
      expect(await s.getUser('u1')).toEqual({
        id: 'u1',
        name: 'a',
        isAdmin: false,
        createdAt: T0,
        pubKey: 'k',
        serverlessDiscount: discount,
        webhookSecret: 'whsec_rotated',
      });
    });

    it('keeps volumes per user and their size history through resizes and deletion', async () => {
      const s = store();
      await s.createNetworkVolume(volume());
      await s.createNetworkVolume(volume({ id: 'vol0000002', userId: 'u2' }));
      expect(await s.getNetworkVolume('u2', 'vol0000001')).toBeNull();
      expect((await s.getNetworkVolume(null, 'vol0000001'))?.userId).toBe('u1');
      expect((await s.listNetworkVolumes('u1')).map((v) => v.id)).toEqual(['vol0000001']);
      await s.updateNetworkVolume(volume({ name: 'renamed' }), T0 + 5);
      await s.updateNetworkVolume(volume({ name: 'renamed', size: 20 }), T0 + 10);
      expect(await s.getNetworkVolume('u1', 'vol0000001')).toMatchObject({ name: 'renamed', size: 20 });
      expect(await s.deleteNetworkVolume('u2', 'vol0000001', T0 + 20)).toBe(false);
      expect(await s.deleteNetworkVolume('u1', 'vol0000001', T0 + 30)).toBe(true);
      expect(await s.getNetworkVolume('u1', 'vol0000001')).toBeNull();
      expect(await s.listVolumeUsage('u1', 0, T0 + 100)).toEqual([
        { volumeId: 'vol0000001', userId: 'u1', sizeGb: 10, startedAt: T0, endedAt: T0 + 10 },
        { volumeId: 'vol0000001', userId: 'u1', sizeGb: 20, startedAt: T0 + 10, endedAt: T0 + 30 },
      ]);
      expect(await s.listVolumeUsage('u1', T0 + 10, T0 + 100)).toHaveLength(1);
      expect(await s.listVolumeUsage('u1', T0 + 30, T0 + 100)).toEqual([]);
    });

    it('finds the endpoints that use a volume, through either field', async () => {
      const s = store();
      const e = endpoint;
      await s.createEndpoint(e('ep1', { networkVolumeId: 'vol0000001' }));
      await s.createEndpoint(e('ep2', { networkVolumeIds: ['vol0000009', 'vol0000001'] }));
      await s.createEndpoint(e('ep3', { networkVolumeIds: ['vol0000009'] }));
      expect(await s.endpointsUsingVolume('u1', 'vol0000001')).toEqual(['ep1', 'ep2']);
      expect(await s.endpointsUsingVolume('u2', 'vol0000001')).toEqual([]);
    });

    it('keeps registry auths per user with unique names, and finds templates that use one', async () => {
      const s = store();
      await s.createRegistryAuth(auth());
      // Refused as a unique violation, which the engine turns into NAME_TAKEN (engine/resource-rules.ts).
      const taken = await s.createRegistryAuth(auth({ id: 'c000000000000000000000002' })).catch((e: unknown) => e);
      expect(isUniqueViolation(taken), String(taken)).toBe(true);
      await s.createRegistryAuth(auth({ id: 'c000000000000000000000003', userId: 'u2' }));
      expect(await s.getRegistryAuth('u2', 'c000000000000000000000001')).toBeNull();
      expect((await s.listRegistryAuths('u1')).map((r) => r.id)).toEqual(['c000000000000000000000001']);
      await s.updateRegistryAuth(auth({ sealed: 'resealed' }));
      expect((await s.getRegistryAuth('u1', 'c000000000000000000000001'))?.sealed).toBe('resealed');
      const t = template({ imageName: 'x' });
      await s.createTemplate({ ...t, containerRegistryAuthId: 'c000000000000000000000001' });
      await s.createTemplate({ ...t, id: 't2', name: 'other' });
      expect(await s.templatesUsingRegistryAuth('u1', 'c000000000000000000000001')).toEqual(['t1']);
      expect(await s.deleteRegistryAuth('u2', 'c000000000000000000000001')).toBe(false);
      expect(await s.deleteRegistryAuth('u1', 'c000000000000000000000001')).toBe(true);
      expect(await s.listRegistryAuths('u1')).toEqual([]);
    });

    it('keeps secrets per user with unique names; another user neither sees nor deletes them', async () => {
      const s = store();
      await s.createSecret(secret());
      const taken = await s.createSecret(secret({ id: 'c100000000000000000000002' })).catch((e: unknown) => e);
      expect(isUniqueViolation(taken), String(taken)).toBe(true);
      // The same name is free for another user.
      await s.createSecret(secret({ id: 'c100000000000000000000003', userId: 'u2' }));
      await s.createSecret(secret({ id: 'c100000000000000000000004', name: 'api_KEY-2', description: '' }));
      expect((await s.listSecrets('u1'))[0]).toEqual(secret());
      expect((await s.listSecrets('u1')).map((r) => r.name)).toEqual(['hf', 'api_KEY-2']);
      expect((await s.listSecrets('u2')).map((r) => r.id)).toEqual(['c100000000000000000000003']);
      expect(await s.deleteSecret('u2', 'c100000000000000000000001')).toBe(false);
      expect(await s.deleteSecret('u1', 'c100000000000000000000001')).toBe(true);
      expect(await s.deleteSecret('u1', 'c100000000000000000000001')).toBe(false);
      expect((await s.listSecrets('u1')).map((r) => r.name)).toEqual(['api_KEY-2']);
      // Deleted, the name can be taken again.
      await s.createSecret(secret({ id: 'c100000000000000000000005' }));
      expect((await s.listSecrets('u1')).map((r) => r.name)).toEqual(['api_KEY-2', 'hf']);
    });

    it("keeps the server's settings: the first value claimed wins, even claimed at once; put replaces it", async () => {
      const s = store();
      const claims = await Promise.all(['a', 'b', 'c'].map((v) => s.claimSetting('contract-key', v)));
      expect(new Set(claims).size).toBe(1);
      const first = claims[0]!;
      expect(await s.claimSetting('contract-key', 'later')).toBe(first);
      await s.putSetting('contract-key', 'replaced');
      expect(await s.claimSetting('contract-key', 'later')).toBe('replaced');
      await s.putSetting('contract-other', 'put first');
      expect(await s.claimSetting('contract-other', 'x')).toBe('put first');
    });

    it('records worker usage: one open record per worker, closed once, resumed after standby', async () => {
      const s = store();
      await s.recordUsageStart(usage());
      await s.recordUsageStart(usage({ startedAt: T0 + 1 })); // a second open is ignored
      await s.recordUsageEnd('w1', T0 + 100);
      await s.recordUsageEnd('w1', T0 + 200); // already closed: unchanged
      await s.recordUsageEnd('nobody', T0 + 200);
      await s.recordUsageResume('w1', T0 + 300);
      await s.recordUsageStart(
        usage({ workerId: 'w2', endpointId: 'ep2', templateId: 't2', imageName: 'img2', startedAt: T0 + 50 }),
      );
      await s.recordUsageStart(usage({ workerId: 'w3', userId: 'u2', startedAt: T0 }));
      const all = await s.listUsage({ userId: 'u1', from: 0, to: T0 + 1000 });
      expect(all.map((u) => [u.workerId, u.startedAt, u.endedAt])).toEqual([
        ['w1', T0, T0 + 100],
        ['w2', T0 + 50, null],
        ['w1', T0 + 300, null],
      ]);
      expect(all[2]).toMatchObject({ gpuTypeId: 'NVIDIA A40', gpuCount: 1, imageName: 'img' });
      expect((await s.listUsage({ userId: 'u1', from: T0 + 100, to: T0 + 1000 })).map((u) => u.workerId)).toEqual([
        'w2',
        'w1',
      ]);
      expect(await s.listUsage({ userId: 'u1', from: 0, to: T0 })).toEqual([]);
      const narrow = async (f: object) =>
        (await s.listUsage({ userId: 'u1', from: 0, to: T0 + 1000, ...f })).map((u) => u.workerId);
      expect(await narrow({ endpointId: 'ep2' })).toEqual(['w2']);
      expect(await narrow({ workerId: 'w1' })).toEqual(['w1', 'w1']);
      expect(await narrow({ templateId: 't2' })).toEqual(['w2']);
      expect(await narrow({ imageName: 'img' })).toEqual(['w1', 'w1']);
    });
  });
}
