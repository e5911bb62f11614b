import { spawn, type ChildProcess } from 'node:child_process';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const running = new Set<ChildProcess>();

// Whatever happens (failure, timeout, crash), no child outlives the process that started it.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface Fixture {
  child: ChildProcess;
  /** Everything the child wrote to stdout so far. */
  output(): string;
  /** Resolves with the first stdout line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code once the child ended (rejects on a non-zero code). */
  exited: Promise<void>;
}

/**
 * Runs a TypeScript file in a new Node process (through tsx), from the repository root, e.g.
 * `runFixture(new URL('./fixtures/hold-lock.ts', import.meta.url), [...])`.
 */
export function runFixture(script: URL | string, args: string[], env: Record<string, string> = {}): Fixture {
  const file = script instanceof URL ? fileURLToPath(script) : script;
  const name = basename(file, '.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', file, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  const lineListeners = new Set<() => void>();
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const listener of lineListeners) listener();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      for (const listener of lineListeners) listener();
      if (code === 0) resolve();
      else reject(new Error(`fixture ${name} exited with ${String(code ?? signal)}: ${stderr.slice(-2000)}`));
    });
  });
  exited.catch(() => undefined); // callers that kill the child on purpose do not await it

  const waitForLine = (pattern: RegExp, timeoutMs = 20_000): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const line = stdout.split('\n').find((candidate) => pattern.test(candidate));
        if (line !== undefined) finish(() => resolve(line));
        else if (child.exitCode !== null || child.signalCode !== null) {
          finish(() => reject(new Error(`fixture ${name} ended before printing ${pattern}: ${stderr.slice(-2000)}`)));
        }
      };
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${pattern} from fixture ${name} in ${timeoutMs} ms`))), timeoutMs);
      const finish = (settle: () => void): void => {
        clearTimeout(timer);
        lineListeners.delete(check);
        settle();
      };
      lineListeners.add(check);
      check();
    });

  return { child, output: () => stdout, waitForLine, exited };
}

/** Kills every fixture still running (afterAll). */
export function killFixtures(): void {
  for (const child of running) child.kill('SIGKILL');
}
