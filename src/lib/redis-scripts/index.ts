import { existsSync, readFileSync } from 'node:fs';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';

/** A standalone Redis or a Redis Cluster (ioredis). */
export type ScriptClient = Redis | Cluster;

/** One Lua script: its source and how many of its arguments are keys. */
export interface LuaScript {
  lua: string;
  /** Leading arguments that are keys; `'dynamic'` when the caller passes the count first (EVALSHA style). */
  keys: number | 'dynamic';
}

/** The typed functions of a script set (an interface): each returns the script's reply. */
export type ScriptFunctions<T> = Record<keyof T, (...args: never[]) => Promise<unknown>>;

/** The same scripts queued on a pipeline or MULTI instead of sent at once. */
export type Queued<T extends ScriptFunctions<T>> = {
  [K in keyof T]: (...args: Parameters<T[K]>) => ChainableCommander;
};

export type Scripts<T extends ScriptFunctions<T>> = T & {
  /** Queues the scripts on `pipeline` (pipeline or multi of the same client). */
  queue(pipeline: ChainableCommander): Queued<T>;
};

/** `--- @include "name"`: a shared piece of Lua, written once and inlined where it is named (as BullMQ's). */
const INCLUDE = /^--- @include "([^"]+)"[ \t]*$/gm;

/** The Lua pieces every script may include (`includes/<name>.lua` beside this file). */
const SHARED_INCLUDES = new URL('./includes/', import.meta.url);

/**
 * Reads a Lua file relative to a module, `readLua(import.meta.url, 'lua/reserve.lua')`, with its
 * includes inlined: each `--- @include "name"` line becomes `name.lua`, looked up beside the file
 * first, then among the shared includes; every piece is inlined once per script, where it is
 * first named (Lua wants a local function defined before its use).
 */
export function readLua(moduleUrl: string | URL, file: string): string {
  return inline(new URL(file, moduleUrl), new Set());
}

function inline(url: URL, seen: Set<string>): string {
  const source = readFileSync(url, 'utf8');
  return source.replace(INCLUDE, (_line, name: string) => {
    const piece = includeUrl(url, name);
    if (seen.has(piece.href)) return `-- ${name}: included above`;
    seen.add(piece.href);
    return inline(piece, seen).trimEnd();
  });
}

function includeUrl(from: URL, name: string): URL {
  const beside = new URL(`${name}.lua`, from);
  return existsSync(beside) ? beside : new URL(`${name}.lua`, SHARED_INCLUDES);
}

/** A client's commands by name, defined ones included. */
type Commands = Record<string, ((...args: unknown[]) => Promise<unknown>) | undefined>;

/** Defines `<namespace><Name>` on the client unless it is there already (a second definition is harmless); returns the name. */
function defineOnce(redis: ScriptClient, namespace: string, operation: string, { lua, keys }: LuaScript): string {
  const name = namespace + operation.charAt(0).toUpperCase() + operation.slice(1);
  if (typeof (redis as unknown as Commands)[name] !== 'function') redis.defineCommand(name, keys === 'dynamic' ? { lua } : { numberOfKeys: keys, lua });
  return name;
}

/**
 * Defines a set of scripts on the client and returns them as typed functions. Each becomes an
 * ioredis command named `<namespace><Name>`: EVALSHA with a fallback to EVAL, the client's key
 * prefix applied to KEYS, and the same command on the client's pipelines. The types are the
 * caller's (an interface of what each script takes and returns), so ioredis' global types stay
 * untouched. Defining the same set twice on one client is harmless.
 */
export function defineScripts<T extends ScriptFunctions<T>>(
  redis: ScriptClient,
  namespace: string,
  sources: { [K in keyof T & string]: LuaScript },
): Scripts<T> {
  const names = new Map<string, string>();
  const client = redis as unknown as Commands;
  const scripts: Record<string, unknown> = {};
  for (const [operation, script] of Object.entries<LuaScript>(sources)) {
    const name = defineOnce(redis, namespace, operation, script);
    names.set(operation, name);
    scripts[operation] = (...args: unknown[]) => client[name]!(...args);
  }
  scripts.queue = (pipeline: ChainableCommander) => {
    const queued = pipeline as unknown as Record<string, (...args: unknown[]) => ChainableCommander>;
    return Object.fromEntries([...names].map(([operation, name]) => [operation, (...args: unknown[]) => queued[name]!(...args)]));
  };
  return scripts as Scripts<T>;
}

/**
 * One script as an operation: an input object in, a typed reply out. Its KEYS and ARGV are built
 * here, in one place beside its Lua header, so no caller lines up a long positional list.
 */
export interface OperationSpec<In, Out> {
  lua: string;
  keys(input: In): string[];
  args(input: In): Array<string | number>;
  /** The script's raw reply read into its typed result. */
  reply(raw: unknown): Out;
}

/** A defined operation: call it, or queue it on a pipeline and read the raw reply with `reply`. */
export interface Operation<In, Out> {
  (input: In): Promise<Out>;
  queue(pipeline: ChainableCommander, input: In): ChainableCommander;
  reply(raw: unknown): Out;
}

type OperationsOf<T> = { [K in keyof T]: T[K] extends OperationSpec<infer In, infer Out> ? Operation<In, Out> : never };

/**
 * Defines operations on the client (as `defineScripts`: EVALSHA with a fallback to EVAL, the key
 * prefix applied to KEYS, the same command on pipelines), each named `<namespace><Name>`.
 */
export function defineOperations<T extends Record<string, OperationSpec<never, unknown>>>(redis: ScriptClient, namespace: string, specs: T): OperationsOf<T> {
  const client = redis as unknown as Commands;
  const operations: Record<string, unknown> = {};
  for (const [operation, spec] of Object.entries(specs) as Array<[string, OperationSpec<unknown, unknown>]>) {
    // The key count goes first on each call: an operation's keys may vary with its input.
    const name = defineOnce(redis, namespace, operation, { lua: spec.lua, keys: 'dynamic' });
    const argv = (input: unknown): unknown[] => {
      const keys = spec.keys(input);
      return [keys.length, ...keys, ...spec.args(input)];
    };
    const run = async (input: unknown): Promise<unknown> => spec.reply(await client[name]!(...argv(input)));
    operations[operation] = Object.assign(run, {
      queue: (pipeline: ChainableCommander, input: unknown) =>
        (pipeline as unknown as Record<string, (...args: unknown[]) => ChainableCommander>)[name]!(...argv(input)),
      reply: (raw: unknown) => spec.reply(raw),
    });
  }
  return operations as OperationsOf<T>;
}
