import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { findLeaks } from './app-logs.js';

/**
 * Global setup of the integration and system projects: every test app of the run logs to a
 * folder of the run (test/support/app-logs.ts), and when the project's files are all done, the
 * folder is scanned. A phone number or a session token in clear fails the run, naming the file
 * and line; the folder is then kept (under test-results/, for the CI artifact). A clean run
 * removes it.
 */
export default function setup(project: TestProject): () => void {
  const dir = join(process.cwd(), 'test-results', 'app-logs', `${project.name}-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  project.provide('appLogDir', dir);
  return () => {
    try {
      scan(dir);
    } catch (error) {
      // Vitest reports an error thrown here but still exits 0: fail the run explicitly.
      console.error(error);
      process.exitCode = 1;
    }
  };
}

/**
 * Scans the folder and removes it when clean. Silent when clean: it runs after Vitest's summary,
 * which stays the run's last line; a finding throws.
 */
export function scan(dir: string): void {
  const findings: string[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.log'))) {
    const text = readFileSync(join(dir, file), 'utf8');
    text.split('\n').forEach((line, index) => {
      if (line === '') return;
      for (const leak of findLeaks(line)) findings.push(`${join(dir, file)}:${index + 1}: ${leak.kind} ${leak.sample}`);
    });
  }
  if (findings.length > 0) {
    throw new Error(`The app logs of this run hold ${findings.length} unmasked phone numbers or tokens:\n${findings.slice(0, 20).join('\n')}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
