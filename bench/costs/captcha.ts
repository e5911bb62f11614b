/**
 * What one captcha of a sale costs its solver (docs/flows/purchase-gate.md): challenges made by
 * the server's own CaptchaChallenges at each given sale cost (maxNumber), solved one after another
 * by altcha-lib's solver in Node (node:crypto PBKDF2, what a script would run) and in Chromium
 * (WebCrypto, what the web app runs). Prints the median and spread of the time per solve, in ms,
 * and the load average, as other work on the machine slows both.
 *
 *   npx tsx bench/costs/captcha.ts [--iterations 5000] [--max-number 100,400,2000,5000] [--solves 40]
 */
import { loadavg } from 'node:os';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import { loadConfig } from '../../src/infra/config.js';
import { CAPTCHA_MAX_NUMBER, CaptchaChallenges } from '../../src/modules/seckill/index.js';

const { values } = parseArgs({ options: { iterations: { type: 'string' }, 'max-number': { type: 'string' }, solves: { type: 'string', default: '40' } } });
const iterations = Number(values.iterations ?? loadConfig({}).purchaseGate.captchaIterations);
/** The sale costs to measure, e.g. 100,400 (default: the default of a new sale). */
const maxNumbers = (values['max-number'] ?? String(CAPTCHA_MAX_NUMBER.default)).split(',').map(Number);
const solves = Number(values.solves);

// Challenges are made without Redis (only a check uses it): the connection is never opened.
const redis = new Redis({ lazyConnect: true });
const challenges = new CaptchaChallenges(redis, [{ kid: 'bench', secret: 'captcha-cost-bench-key-not-a-secret-0123' }], { iterations, ttlSeconds: 600 });
const make = (maxNumber: number) => Promise.all(Array.from({ length: solves }, (_, i) => challenges.create(String(i), '1', maxNumber)));

interface Solve {
  ms: number;
  /** Key derivations made: the answer + 1. */
  attempts: number;
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/** Time per solve (it varies with the drawn answer) and per attempt (the rate the cost is paid at). */
function summary(maxNumber: number, where: string, solved: Solve[]): Record<string, string | number> {
  const ms = solved.map((solve) => solve.ms);
  const round = (n: number) => Math.round(n);
  return {
    'max number': maxNumber,
    where,
    solves: ms.length,
    'median ms': round(quantile(ms, 0.5)),
    'p10 ms': round(quantile(ms, 0.1)),
    'p90 ms': round(quantile(ms, 0.9)),
    'min ms': round(Math.min(...ms)),
    'max ms': round(Math.max(...ms)),
    'ms per attempt (median)': quantile(
      solved.map((solve) => solve.ms / solve.attempts),
      0.5,
    ).toFixed(2),
  };
}

async function inNode(list: Challenge[]): Promise<Solve[]> {
  const solved: Solve[] = [];
  for (const challenge of list) {
    const started = performance.now();
    const solution = await solveChallenge({ challenge, deriveKey, timeout: 0 });
    if (solution === null) throw new Error('a challenge was not solved');
    solved.push({ ms: performance.now() - started, attempts: solution.counter + 1 });
  }
  return solved;
}

/** altcha-lib's browser build, served as it is published (ES modules), solving in one page: each list in turn. */
async function inChromium(lists: Challenge[][]): Promise<Solve[][]> {
  const root = fileURLToPath(new URL('../../node_modules/altcha-lib/dist/esm/v2/', import.meta.url));
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').slice(1);
    if (path === '') return void response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>captcha cost</title>');
    readFile(root + path.replace(/\.\./g, '')).then(
      (body) => response.writeHead(200, { 'content-type': 'text/javascript' }).end(body),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/`); // localhost: a secure context, WebCrypto there
    const modules = { solver: '/index.js', webPbkdf2: '/algorithms/web/pbkdf2.js' };
    const results: Solve[][] = [];
    for (const list of lists) {
      results.push(
        await page.evaluate(
          async ({ challenges, modules }) => {
            const { solveChallenge: solve } = (await import(modules.solver)) as typeof import('altcha-lib');
            const web = (await import(modules.webPbkdf2)) as typeof import('altcha-lib/algorithms/pbkdf2');
            const solved: Array<{ ms: number; attempts: number }> = [];
            for (const challenge of challenges) {
              const started = performance.now();
              const solution = await solve({ challenge, deriveKey: web.deriveKey, timeout: 0 });
              if (solution === null) throw new Error('a challenge was not solved');
              solved.push({ ms: performance.now() - started, attempts: solution.counter + 1 });
            }
            return solved;
          },
          { challenges: list, modules },
        ),
      );
    }
    return results;
  } finally {
    await browser.close();
    server.close();
  }
}

const load = () => loadavg()[0]!.toFixed(1);
console.log(`${iterations} PBKDF2-SHA256 iterations per attempt; answers drawn from 1..max number; ${solves} solves each; load average ${load()}`);
const inNodeRows: Array<ReturnType<typeof summary>> = [];
for (const maxNumber of maxNumbers) inNodeRows.push(summary(maxNumber, 'node', await inNode(await make(maxNumber))));
const inChromiumRows = (await inChromium(await Promise.all(maxNumbers.map(make)))).map((solved, index) => summary(maxNumbers[index]!, 'chromium', solved));
console.table(maxNumbers.flatMap((_, index) => [inNodeRows[index]!, inChromiumRows[index]!]));
console.log(`load average ${load()} at the end (${new Date().toISOString()})`);
redis.disconnect();
