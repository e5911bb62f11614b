import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.js';

/**
 * Whether an `authorization` header carries `Bearer <token>`. Compared as digests, in constant
 * time: neither the token nor its length leaks through timing.
 */
export function bearerTokenMatcher(token: string): (authorization: string | undefined) => boolean {
  const expected = digest(token);
  return (authorization) => authorization?.startsWith('Bearer ') === true && timingSafeEqual(digest(authorization.slice('Bearer '.length).trim()), expected);
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * `GET /metrics` of a process without an HTTP app (the standalone order worker, which must not
 * load Fastify): node:http, the same token rule as the app's route (401 without it, before any
 * Redis command), concurrent scrapes sharing one rendering, 404 for any other path.
 */
export async function serveMetrics(metrics: Metrics, options: { token: string; host: string; port: number }): Promise<Server> {
  const holdsToken = bearerTokenMatcher(options.token);
  let rendering: Promise<string> | undefined;
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') return void response.writeHead(404).end();
    if (!holdsToken(request.headers.authorization)) {
      return void response
        .writeHead(401, { 'www-authenticate': 'Bearer realm="metrics"', 'content-type': 'application/json' })
        .end('{"success":false,"errorMsg":"A metrics token is required"}');
    }
    rendering ??= metrics.render().finally(() => {
      rendering = undefined;
    });
    rendering.then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(503, { 'retry-after': '1' }).end(),
    );
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
