/**
 * Typed builders of settings. Each call declares one environment variable (its name, type,
 * default, bounds and README words) and returns a `Setting` that knows how to read it; the
 * declarations in settings.ts are the only place a variable is spelled.
 */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** One environment variable as the README's configuration table shows it (scripts/config-table.ts). */
export interface EnvVar {
  name: string;
  /** A value that behaves exactly like leaving the variable unset ('' for "empty"). */
  default: string;
  /** The default as the table shows it (Markdown), when the plain value says too little. */
  shown?: string;
  /** What it does, one table cell of Markdown. */
  meaning: string;
}

/** The value of another setting, for a default, a bound or a rule that depends on it. */
export type Get = <T>(setting: Setting<T>) => T;

/** What a setting reads: the environment and, through `get`, the settings it depends on. */
export interface Source {
  /** The variable exactly as set; undefined when absent. */
  exact(name: string): string | undefined;
  /** The variable trimmed; undefined when absent or blank, so that a blank value behaves like unset. */
  trimmed(name: string): string | undefined;
  get: Get;
}

/** What a parser or a rule gets besides the value. */
export interface Context {
  env: string;
  get: Get;
  /** Stops the start with "Invalid environment variable NAME=value: expected <expected>" (no value for secrets). */
  refuse: (expected: string) => never;
}

/** One declared variable: its README row and how to read it. */
export class Setting<T> {
  constructor(
    readonly envVar: EnvVar,
    readonly read: (source: Source) => T,
  ) {}
}

/** Settings grouped the way `Config` is. */
export interface SettingsTree {
  readonly [key: string]: Setting<unknown> | SettingsTree;
}

/** The values a tree of settings reads: each `Setting<T>` becomes a `T`, each group a group. */
export type ConfigOf<S> = { [K in keyof S]: S[K] extends Setting<infer T> ? T : ConfigOf<S[K]> };

interface Documented {
  env: string;
  /** The README's "meaning" cell: one line of Markdown. */
  doc: string;
  /** Refusals do not echo the value (it is a credential). */
  secret?: boolean;
}

/** A fixed default, or one computed from other settings; then `shown` tells the README what it is. */
type Default<T> = { default: T; shown?: string } | { default: (get: Get) => T; shown: string };

/** A rule beyond the type (a bound set by another setting, a template that must render): refuses or throws. */
type Check<T> = (value: T, context: Context) => void;

type Declared<T> = Documented & Default<T> & { check?: Check<T> };

type Bound = number | ((get: Get) => number);

/** Which lookup a setting uses: strings keep what was set (spaces, an explicit empty value); the others trim. */
type Lookup = 'exact' | 'trimmed';

/** A setting of any shape: unset means `default`; a set value goes through `parse`, and every value through `check`. */
export function custom<T>(options: Declared<T> & { parse: (text: string, context: Context) => T }, lookup: Lookup = 'trimmed'): Setting<T> {
  const { env, doc, shown, parse, check } = options;
  const envVar: EnvVar = { name: env, default: isComputed(options) ? '' : plain(options.default), shown, meaning: doc };
  return new Setting(envVar, (source) => {
    const text = source[lookup](env);
    const value = text === undefined ? defaultValue(options, source.get) : parse(text, contextOf(options, text, source.get));
    check?.(value, contextOf(options, value, source.get));
    return value;
  });
}

/** Text as set: spaces are kept, and a variable set to '' is empty rather than the default. */
export function str(options: Declared<string> & { trim?: boolean }): Setting<string> {
  return custom({ ...options, parse: (text) => (options.trim === true ? text.trim() : text) }, 'exact');
}

/** An integer within the bounds; a bound may come from another setting. */
export function int(options: Declared<number> & { min?: Bound; max?: Bound }): Setting<number> {
  return custom({
    ...options,
    parse: (text, { get, refuse }) => {
      const min = bound(options.min ?? Number.MIN_SAFE_INTEGER, get);
      const max = bound(options.max ?? Number.MAX_SAFE_INTEGER, get);
      const value = Number(text);
      if (!/^-?\d+$/.test(text) || value < min || value > max) refuse(`an integer from ${min} to ${max}`);
      return value;
    },
  });
}

/** A decimal number strictly between the bounds. */
export function decimal(options: Declared<number> & { above: number; below: number }): Setting<number> {
  return custom({
    ...options,
    parse: (text, { refuse }) => {
      const value = Number(text);
      if (!/^\d*\.?\d+(e-?\d+)?$/i.test(text) || !(value > options.above && value < options.below)) {
        refuse(`a number between ${options.above} and ${options.below} (exclusive)`);
      }
      return value;
    },
  });
}

export function bool(options: Declared<boolean>): Setting<boolean> {
  return custom({
    ...options,
    parse: (text, { refuse }) => {
      if (text === 'true' || text === '1') return true;
      if (text === 'false' || text === '0') return false;
      return refuse('true or false');
    },
  });
}

export function oneOf<const V extends readonly string[]>(options: Declared<V[number]> & { values: V }): Setting<V[number]> {
  return custom({ ...options, parse: (text, { refuse }) => member(options.values, text, refuse) });
}

/** One of the values, or undefined when unset: the code that uses it decides what unset means. */
export function optionalOneOf<const V extends readonly string[]>(
  options: Documented & { values: V; shown: string; check?: Check<V[number] | undefined> },
): Setting<V[number] | undefined> {
  return custom<V[number] | undefined>({ ...options, default: undefined, parse: (text, { refuse }) => member(options.values, text, refuse) });
}

/** A URL of one of `protocols`; with an empty default, unset means no URL. */
export function url(options: Declared<string> & { protocols: readonly string[]; example?: string }): Setting<string> {
  return custom({
    ...options,
    parse: (text, { refuse }) => {
      const parsed = URL.parse(text);
      if (parsed === null) return refuse(`a URL like ${options.example ?? String(options.default)}`);
      if (!options.protocols.includes(parsed.protocol)) refuse(`a ${options.protocols.join(' or ')}// URL`);
      return text;
    },
  });
}

/** Comma-separated items (trimmed); one that `isItem` refuses refuses the whole value. */
export function list(options: Declared<string[]> & { isItem: (item: string) => boolean; expected: string; skipEmpty?: boolean }): Setting<string[]> {
  return custom({
    ...options,
    parse: (text, { refuse }) => {
      const items = text.split(',').map((item) => item.trim());
      const kept = options.skipEmpty === true ? items.filter((item) => item !== '') : items;
      if (!kept.every(options.isItem)) refuse(options.expected);
      return kept;
    },
  });
}

/** A credential: empty (unset) or at least `minLength` characters without spaces; never echoed. */
export function secret(options: Documented & { minLength: number; shown: string }): Setting<string> {
  return custom({
    ...options,
    secret: true,
    default: '',
    parse: (text, { refuse }) => {
      if (text.length < options.minLength || /\s/.test(text)) refuse(`at least ${options.minLength} characters without spaces (e.g. openssl rand -hex 32)`);
      return text;
    },
  });
}

function member<V extends string>(values: readonly V[], text: string, refuse: Context['refuse']): V {
  const found = values.find((value) => value === text);
  return found ?? refuse(`one of ${values.join(', ')}`);
}

function contextOf(options: Documented, value: unknown, get: Get): Context {
  const echoed = options.secret === true ? '' : `=${JSON.stringify(value)}`;
  return {
    env: options.env,
    get,
    refuse: (expected) => {
      throw new ConfigError(`Invalid environment variable ${options.env}${echoed}: expected ${expected}`);
    },
  };
}

function isComputed<T>(options: Default<T>): options is { default: (get: Get) => T; shown: string } {
  return typeof options.default === 'function';
}

function defaultValue<T>(options: Default<T>, get: Get): T {
  return isComputed(options) ? options.default(get) : options.default;
}

function bound(value: Bound, get: Get): number {
  return typeof value === 'function' ? value(get) : value;
}

/** The default as an environment value: what setting the variable to it amounts to. */
function plain(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}
