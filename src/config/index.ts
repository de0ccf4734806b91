export { loadConfig, ConfigError, type LoadSources } from './load.ts';
export { SETTINGS, type Config, type SettingSpec } from './schema.ts';
