import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { newNetworkVolumeId, TEXT_MAX, VOLUME_MAX_GB, type NetworkVolume } from '../domain/index.ts';
import { invalidField, WharfError } from '../errors/index.ts';
import type { Store } from '../store/index.ts';
import type { Clock } from './clock.ts';
import { refuseInUse } from './resource-rules.ts';

export interface VolumeInput {
  name: string;
  size: number;
  dataCenterId: string;
}

/** Not empty and not longer than the field takes (TEXT_MAX, as the REST schemas say). */
function checkText(field: 'name' | 'dataCenterId', value: string): void {
  if (value.trim() === '') throw invalidField(field, `${field} must not be empty`);
  if (value.length > TEXT_MAX[field])
    throw invalidField(field, `${field} must have at most ${TEXT_MAX[field]} characters`);
}

function checkSize(size: number): void {
  if (!Number.isInteger(size) || size < 0 || size > VOLUME_MAX_GB) {
    throw invalidField('size', `size must be an integer number of GB from 0 to ${VOLUME_MAX_GB}`);
  }
}

/**
 * Network volumes (DESIGN.md §3 "Network volumes"): a directory `<root>/<id>` that workers of endpoints naming the
 * volume get as RUNPOD_VOLUME_PATH. Sizes only grow; a volume an endpoint uses cannot be deleted.
 */
export class Volumes {
  private readonly store: Store;
  private readonly root: string;
  private readonly clock: Clock;

  constructor(store: Store, root: string, clock: Clock) {
    this.store = store;
    this.root = root;
    this.clock = clock;
  }

  /** Where the volume's files live on this machine. */
  path(id: string): string {
    // Ids come from newNetworkVolumeId; anything else must never become a path outside the root.
    if (!/^[a-z0-9]{1,64}$/.test(id)) throw new Error(`not a network volume id: ${id}`);
    return join(this.root, id);
  }

  async create(userId: string, input: VolumeInput): Promise<NetworkVolume> {
    checkSize(input.size);
    checkText('name', input.name);
    checkText('dataCenterId', input.dataCenterId);
    const v: NetworkVolume = {
      id: newNetworkVolumeId(),
      userId,
      name: input.name,
      size: input.size,
      dataCenterId: input.dataCenterId,
      createdAt: this.clock.now(),
    };
    const dir = this.path(v.id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await this.store.createNetworkVolume(v);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return v;
  }

  async get(userId: string, id: string): Promise<NetworkVolume> {
    const v = await this.store.getNetworkVolume(userId, id);
    if (!v) throw new WharfError('NETWORK_VOLUME_NOT_FOUND', { networkVolumeId: id });
    return v;
  }

  list(userId: string): Promise<NetworkVolume[]> {
    return this.store.listNetworkVolumes(userId);
  }

  /** Sparse: fields left out keep their value. A smaller size is refused (a volume cannot shrink). */
  async update(userId: string, id: string, patch: { name?: string | undefined; size?: number | undefined }) {
    const before = await this.get(userId, id);
    const after: NetworkVolume = { ...before };
    if (patch.name !== undefined) {
      checkText('name', patch.name);
      after.name = patch.name;
    }
    if (patch.size !== undefined) {
      checkSize(patch.size);
      if (patch.size < before.size) {
        throw invalidField('size', `size can only grow: the volume has ${before.size} GB, ${patch.size} GB is smaller`);
      }
      after.size = patch.size;
    }
    await this.store.updateNetworkVolume(after, this.clock.now());
    return after;
  }

  /** Refused with RESOURCE_IN_USE while an endpoint names the volume; removes its directory. */
  async delete(userId: string, id: string): Promise<void> {
    const deleted = await this.store.exclusively(userId, async () => {
      await this.get(userId, id);
      refuseInUse('Network volume', id, await this.store.endpointsUsingVolume(userId, id), 'endpoint');
      return this.store.deleteNetworkVolume(userId, id, this.clock.now());
    });
    // Outside the lock: removing a large volume's files may take a while, and holds no one else's change up.
    if (deleted) await rm(this.path(id), { recursive: true, force: true });
  }
}
