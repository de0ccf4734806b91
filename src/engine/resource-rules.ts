import { WharfError } from '../errors/index.ts';
import { isUniqueViolation } from '../store/index.ts';

/**
 * Run a write of a named resource whose name the caller checked as free: a write that lost a race to another with
 * the same name (the store's unique index refuses it) is NAME_TAKEN, as the check would have said, not a 500.
 */
export async function nameKept<T>(write: () => Promise<T>, resource: string, name: string): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new WharfError('NAME_TAKEN', { resource, name });
    throw error;
  }
}

/** Deleting a resource something still names is refused: RESOURCE_IN_USE, naming the users (`what`: their kind). */
export function refuseInUse(resource: string, id: string, users: string[], what: string): void {
  if (users.length === 0) return;
  throw new WharfError('RESOURCE_IN_USE', { resource, id, reason: `used by ${what}(s) ${users.join(', ')}` });
}
