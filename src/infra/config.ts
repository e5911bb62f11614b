/**
 * Configuration from environment variables, validated once at start.
 *
 * Every variable has a default that works on a developer machine (services on loopback),
 * so `npm start` needs no .env file. A bad value stops the process with a message that
 * names the variable, what it got and what it expects.
 *
 * Each variable is declared once, in config/settings.ts, with the typed builders of
 * config/fields.ts; `Config`, `loadConfig` and `ENV_VARS` (the README's table) are derived from
 * those declarations. The builders are our own rather than env-schema with TypeBox: defaults and
 * bounds that depend on other settings, and refusals that say what was expected, would each need
 * a custom ajv keyword or a second pass after it, so the schema would come out longer, not shorter.
 */
import { ConfigError, Setting, type ConfigOf, type EnvVar, type Source, type SettingsTree } from './config/fields.js';
import { RETIRED_ENV_VARS, SETTINGS } from './config/settings.js';

export { ConfigError, type EnvVar } from './config/fields.js';
export { RETIRED_ENV_VARS } from './config/settings.js';
export { SMS_BODY_PLACEHOLDERS, renderSmsBody } from './config/parsers.js';

export type Config = ConfigOf<typeof SETTINGS>;

type Env = Record<string, string | undefined>;

/** Every variable `loadConfig` reads, in the order of the README's table (npm run docs:config writes it). */
export const ENV_VARS: readonly EnvVar[] = envVarsOf(SETTINGS);

export function loadConfig(env: Env = process.env): Config {
  const source = new EnvSource(env);
  refuseRetired(source);
  return valuesOf(SETTINGS, source) as Config;
}

/** A variable that no longer does anything stops the start rather than silently ignoring what its setter meant. */
function refuseRetired(source: Source): void {
  for (const [name, instead] of Object.entries(RETIRED_ENV_VARS)) {
    if (source.trimmed(name) !== undefined) throw new ConfigError(`Environment variable ${name} is no longer supported: ${instead}`);
  }
}

function valuesOf(tree: SettingsTree, source: Source): Record<string, unknown> {
  return Object.fromEntries(Object.entries(tree).map(([key, node]) => [key, node instanceof Setting ? source.get(node) : valuesOf(node, source)]));
}

function envVarsOf(tree: SettingsTree): EnvVar[] {
  return Object.values(tree).flatMap((node) => (node instanceof Setting ? [node.envVar] : envVarsOf(node)));
}

/** The environment of one `loadConfig`; each setting is read once, whether by the tree or by a setting that depends on it. */
class EnvSource implements Source {
  private readonly values = new Map<Setting<unknown>, unknown>();

  constructor(private readonly env: Env) {}

  exact(name: string): string | undefined {
    return this.env[name];
  }

  trimmed(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === '' ? undefined : value;
  }

  get = <T>(setting: Setting<T>): T => {
    if (!this.values.has(setting)) this.values.set(setting, setting.read(this));
    return this.values.get(setting) as T;
  };
}
