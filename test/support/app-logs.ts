import { join } from 'node:path';
import pino, { type DestinationStream } from 'pino';
import { inject } from 'vitest';

/**
 * The app logs of a whole test run, and the scan that fails the run when they hold a phone
 * number or a session token in clear (issue #17, item 8). Test apps log at info level to
 * `<run dir>/<worker pid>.log`; the global setup (test/support/log-scan.ts) creates the run dir
 * and scans it when every test file of the project is done.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** Folder of this run's app logs (integration and system projects); absent in unit tests. */
    appLogDir?: string;
  }
}

let destination: DestinationStream | undefined;

/** Logger options of a test app: info level into this worker's log file of the run, or none outside a scanned run. */
export function testAppLogger(): false | { level: string; stream: DestinationStream } {
  const dir = inject('appLogDir');
  if (dir === undefined) return false;
  // Synchronous appends: a worker that exits right after its last test loses no line.
  destination ??= pino.destination({ dest: join(dir, `${process.pid}.log`), sync: true, mkdir: true, append: true });
  return { level: 'info', stream: destination };
}

export interface Leak {
  kind: 'phone' | 'token' | 'token parameter';
  /** The match with its middle hidden: the report must not leak it once more. */
  sample: string;
}

/** Mainland mobile numbers in any written form, unmasked (masked ones have `****` in the middle). */
const PHONE = /(?<![\d+])(?<!\d\.)(?:(?:\+|00|%2B)?86(?:[ .-]|%20|\+)?)?1[3-9]\d(?:[ .-]|%20|\+)?\d{4}(?:[ .-]|%20|\+)?\d{4}(?!\d)/gi;
/** A session token: 43 base64url characters (32 random bytes), both letter cases, as a whole word. */
const TOKEN = /(?<![\w-])(?=[\w-]{0,42}[A-Z])(?=[\w-]{0,42}[a-z])[\w-]{43}(?![\w-])/g;
/** A credential in a query string whose value was not redacted. */
const TOKEN_PARAMETER = /[?&](?:access_token|token|auth|authorization|api_?key|key|secret|password|session|sig|signature)=(?!\[Redacted\])[^&#\s"\\]+/gi;

const hide = (text: string): string => (text.length <= 8 ? '*'.repeat(text.length) : `${text.slice(0, 4)}…${text.slice(-3)}`);

/** What a log text holds that it must not. */
export function findLeaks(text: string): Leak[] {
  const leaks: Leak[] = [];
  for (const [kind, pattern] of [
    ['phone', PHONE],
    ['token', TOKEN],
    ['token parameter', TOKEN_PARAMETER],
  ] as const) {
    for (const match of text.matchAll(pattern)) leaks.push({ kind, sample: hide(match[0]) });
  }
  return leaks;
}
