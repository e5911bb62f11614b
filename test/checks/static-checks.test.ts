/**
 * The static checks of `npm run check`, run by the suite beside the tests that mostly wait: the
 * type check (tsc, vue-tsc), ESLint with no warnings allowed, and Prettier. A failure prints the
 * tool's own report.
 */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

interface Outcome {
  code: number;
  output: string;
}

function runScript(script: string): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile('npm', ['run', '--silent', script], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe('static checks', () => {
  it.each(['typecheck', 'lint', 'format:check'])('npm run %s passes', async (script) => {
    const { code, output } = await runScript(script);
    expect(code, output).toBe(0);
  });
});
