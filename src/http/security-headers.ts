import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The security headers helmet would set, computed once at start.
 *
 * helmet's middleware (and @fastify/helmet, which runs it per request) builds and validates the
 * same dozen headers on every request: measured on the bench's ping route it doubled the CPU of a
 * request (about 50 µs → 100 µs with CORS). The headers depend only on the options, so they are
 * recorded here from one run of helmet against a recording response, and the app adds the stored
 * object to each reply (see `buildApp`). helmet stays the source of truth for what is sent.
 */
export function securityHeaders(options: Readonly<HelmetOptions>): Readonly<Record<string, string>> {
  const headers = new Map<string, string>();
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      headers.set(name.toLowerCase(), Array.isArray(value) ? value.join(', ') : String(value));
    },
    removeHeader: (name: string) => {
      headers.delete(name.toLowerCase());
    },
  };
  let failure: unknown;
  helmet(options)({} as unknown as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => {
    failure = error;
  });
  if (failure) throw failure instanceof Error ? failure : new Error('helmet failed', { cause: failure });
  return Object.freeze(Object.fromEntries(headers));
}

/** The policy of this app: see docs/http.md, "Hardening". */
export const APP_HELMET_OPTIONS: Readonly<HelmetOptions> = {
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:', 'blob:', 'https:'],
      connectSrc: ["'self'"],
      fontSrc: ["'self'", 'data:'],
      objectSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'self'"],
      formAction: ["'self'"],
      // Not upgrade-insecure-requests: a plain-HTTP deployment (a LAN address) would lose its assets.
      upgradeInsecureRequests: null,
    },
  },
  // HSTS only means something over HTTPS, which a proxy in front terminates; it sets its own.
  strictTransportSecurity: false,
};
