import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../infra/metrics.js';
import { bearerTokenMatcher } from '../infra/metrics-server.js';
import { HTTP_MESSAGES } from './http-messages.js';
import { localize } from './language.js';
import { fail } from './result.js';

/**
 * `GET /metrics`, outside /api: a load balancer routes /api to users and leaves /metrics to the
 * scraper. It answers only a scraper holding METRICS_TOKEN (`Authorization: Bearer <token>`);
 * without a token configured the route does not exist (404), so a deployment that forgets it
 * exposes nothing. A refused request costs no Redis command (a scrape runs several scripts), and
 * concurrent scrapes share one rendering.
 */
export function installMetricsRoute(app: FastifyInstance, metrics: Metrics, token: string): void {
  if (token === '') return;
  const holdsToken = bearerTokenMatcher(token);
  let rendering: Promise<string> | undefined;
  const render = (): Promise<string> =>
    (rendering ??= metrics.render().finally(() => {
      rendering = undefined;
    }));

  app.get('/metrics', async (request, reply) => {
    if (!holdsToken(request.headers.authorization)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="metrics"')
        .send(fail(localize(request, HTTP_MESSAGES.metricsTokenRequired())));
    }
    return reply
      .type(metrics.registry.contentType)
      .serializer(String)
      .send(await render());
  });
}
