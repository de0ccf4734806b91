import { ConfigError, type Config } from '../config/index.ts';
import { parseDeclaredGpus, type Gpu } from '../fleet/index.ts';

/** What checkServerConfig read from the settings it checked, so that startServer does not read them again. */
export interface CheckedConfig {
  /** 'auto': ask nvidia-smi at start; otherwise the declared GPUs ([] for none). */
  gpus: Gpu[] | 'auto';
}

/**
 * The settings that only the modules using them can judge, checked before startServer creates or writes anything.
 * A mistake is a ConfigError, reported like those of loadConfig (one message, exit 2), all of them at once.
 */
export function checkServerConfig(config: Config): CheckedConfig {
  const problems: string[] = [];
  const check = <T>(setting: string, read: () => T, fallback: T): T => {
    try {
      return read();
    } catch (error) {
      problems.push(`${setting}: ${(error as Error).message}`);
      return fallback;
    }
  };
  const gpus = config.gpus === 'auto' ? 'auto' : check('--gpus / WHARF_GPUS', () => parseDeclaredGpus(config.gpus), []);
  if (problems.length > 0) throw new ConfigError(problems);
  return { gpus };
}
