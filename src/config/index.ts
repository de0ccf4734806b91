export { loadConfig, ConfigError, type LoadSources } from './load.ts';
export { SETTINGS, type Config, type SettingSpec } from './schema.ts';
export {
  cliColorWanted,
  cliConfigPath,
  CliConfigError,
  DEFAULT_CLI_URL,
  readCliFile,
  removeCliFile,
  resolveCliConnection,
  writeCliFile,
  type CliConnection,
  type CliFile,
  type CliSource,
} from './cli.ts';
