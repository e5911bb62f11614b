import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/**
 * CORS, only when origins are configured: without any, no CORS header is ever sent (browsers
 * then allow the same origin only), and the plugin's per-request hook is not paid for.
 */
export async function installCors(app: FastifyInstance, origins: string[]): Promise<void> {
  if (origins.length === 0) return;
  await app.register(fastifyCors, {
    origin: origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id', 'x-purchase-token'],
    exposedHeaders: ['retry-after', 'x-request-id'],
    maxAge: 600,
  });
}
