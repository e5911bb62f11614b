import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../infra/metrics.js';

/** `GET /metrics`, outside /api: a load balancer routes /api to users and leaves /metrics to the scraper. */
export function installMetricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', async (_request, reply) =>
    reply
      .type(metrics.registry.contentType)
      .serializer(String)
      .send(await metrics.render()),
  );
}
