/**
 * Summary of a V8 CPU profile (`node --cpu-prof`): where the server's time went, by package or
 * Node subsystem and by function, as self time (time spent in the function's own code).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { COMPILED_ROOT_PATTERN } from '../harness/index.js';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileShare {
  name: string;
  ms: number;
  /** Of the busy (non-idle) time. */
  percent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Profiled time minus the time the event loop had nothing to do. */
  busyMs: number;
  byArea: ProfileShare[];
  topFunctions: ProfileShare[];
}

/**
 * Summarises the main thread's profile in `dir`. A process writes one file per thread (tsx's
 * module loader runs on a thread of its own); the main thread's is the largest.
 */
/** The profile of each server that wrote one: one subdirectory of `dir` per server, named after it. */
export async function summariseProfiles(dir: string, top = 15): Promise<Record<string, ProfileSummary>> {
  const servers = (await readdir(dir, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  const summaries = await Promise.all(servers.map(async (server) => [server, await summariseProfileDir(join(dir, server), top)] as const));
  return Object.fromEntries(summaries);
}

export async function summariseProfileDir(dir: string, top = 15): Promise<ProfileSummary> {
  const files = (await readdir(dir)).filter((name) => name.endsWith('.cpuprofile'));
  const sized = await Promise.all(files.map(async (name) => ({ name, size: (await stat(join(dir, name))).size })));
  const largest = sized.sort((a, b) => b.size - a.size)[0];
  if (!largest) throw new Error(`no .cpuprofile in ${dir}: did the server exit normally?`);
  return summariseProfile(join(dir, largest.name), top);
}

export async function summariseProfile(file: string, top = 15): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  // The bench's servers run compiled copies (harness/compiled-server.ts): name their code by its source path.
  for (const node of profile.nodes) node.callFrame.url = node.callFrame.url.replace(COMPILED_ROOT_PATTERN, 'file:///');
  const selfUs = new Map<number, number>();
  for (const [i, nodeId] of profile.samples.entries()) selfUs.set(nodeId, (selfUs.get(nodeId) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);

  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // Native code (a socket write, a hash) is charged to the JavaScript that called it: "ioredis"
  // then means ioredis and the system calls it makes.
  // Node's own stream and socket layers are skipped, so that a socket write counts for the
  // package that wrote (ioredis, mysql2, fastify) rather than for node:stream_base_commons.
  const callerArea = (id: number): string => {
    let nearest: string | undefined;
    for (let at = parents.get(id); at !== undefined; at = parents.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (frame.url === '') continue;
      nearest ??= areaOf(frame.url, frame.functionName);
      if (!frame.url.startsWith('node:')) return areaOf(frame.url, frame.functionName);
    }
    return nearest ?? '(native: V8 builtins, C++ bindings)';
  };

  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const area =
      node.callFrame.url === '' && !node.callFrame.functionName.startsWith('(') ? callerArea(node.id) : areaOf(node.callFrame.url, node.callFrame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
    const fn =
      `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ''}`.trim();
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  }
  // Shares of busy time: the idle time (start-up, waits between phases) says nothing of the cost.
  const idleUs = areas.get('(idle)') ?? 0;
  areas.delete('(idle)');
  functions.delete('(idle)');
  const busyUs = Math.max(1, totalUs - idleUs);
  const shares = (map: Map<string, number>) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: Math.round((us / busyUs) * 1000) / 10 }));
  return {
    file,
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    byArea: shares(areas),
    topFunctions: shares(functions).slice(0, top),
  };
}

/** Groups code by who owns it: a package, a Node subsystem, this project's source, or V8 itself. */
function areaOf(url: string, functionName: string): string {
  if (url === '') {
    return functionName.startsWith('(') ? functionName : '(native: V8 builtins, C++ bindings)';
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  const core = /^node:(?:internal\/)?([^/]+)/.exec(url);
  if (core) return `node:${core[1]!}`;
  const own = /\/(src|bench)\/(.+)$/.exec(url);
  if (own) return `${own[1]!}/${own[2]!.split('/').slice(0, -1).join('/') || own[2]!}`;
  return url;
}

function shortUrl(url: string): string {
  return url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/');
}
