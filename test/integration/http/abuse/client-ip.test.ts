import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestEnv, type TestEnv } from '../../../support/test-env.js';

/**
 * Per-IP limits cannot be dodged by writing X-Forwarded-For (issue #17, item 3). With TRUST_PROXY
 * set to the proxies in front (a hop count or their addresses), the client is the address the
 * nearest proxy appended, not the left-most one, which the client writes itself. (TRUST_PROXY=true,
 * which believed the left-most address, is refused at start: test/unit/infra/config.test.ts.)
 */

const LIMIT = 3;
let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv({ SMS_HOURLY_LIMIT_PER_IP: String(LIMIT), SMS_INTERVAL_SECONDS: '0' });
});

afterAll(async () => {
  await env?.cleanup();
});

/** Asks for codes for `count` phones from one client behind nginx, each with an invented address in front. */
async function codesFromOneClient(app: FastifyInstance, firstPhone: number, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const invented = `198.51.100.${i + 1}`;
    const response = await app.inject({
      method: 'POST',
      url: `/api/user/code?phone=${firstPhone + i}`,
      remoteAddress: '127.0.0.1', // nginx
      headers: { 'x-forwarded-for': `${invented}, 203.0.113.7` }, // the client's line, then what nginx appended
    });
    statuses.push(response.statusCode);
  }
  return statuses;
}

describe('client IP behind a proxy', () => {
  it.each([
    ['one hop (TRUST_PROXY=1)', '1', 13_700_000_000],
    ["the proxy's address (TRUST_PROXY=127.0.0.1)", '127.0.0.1', 13_700_000_100],
  ])('counts the SMS limit per real client with %s, whatever the client writes in X-Forwarded-For', async (_name, trustProxy, firstPhone) => {
    const { app } = await buildTestApp({ ...env, config: { ...env.config, trustProxy: trustProxy === '1' ? 1 : trustProxy } });
    try {
      const statuses = await codesFromOneClient(app, firstPhone, LIMIT + 3);
      expect(statuses).toEqual([...Array<number>(LIMIT).fill(200), 429, 429, 429]);
    } finally {
      await app.close();
      await env.redis.del(`rl:sms:ip:hourly:203.0.113.7`);
    }
  });

  it('takes the address two hops back with TRUST_PROXY=2 (a load balancer, then nginx)', async () => {
    const { app } = await buildTestApp({ ...env, config: { ...env.config, trustProxy: 2 } });
    try {
      const answers = [];
      for (let i = 0; i < LIMIT + 1; i++) {
        const response = await app.inject({
          method: 'POST',
          url: `/api/user/code?phone=${13_700_000_200 + i}`,
          remoteAddress: '10.0.0.2',
          headers: { 'x-forwarded-for': `198.51.100.${i + 1}, 203.0.113.9, 10.0.0.1` },
        });
        answers.push(response.statusCode);
      }
      expect(answers).toEqual([...Array<number>(LIMIT).fill(200), 429]);
      expect(await env.redis.exists('rl:sms:ip:hourly:203.0.113.9')).toBe(1);
    } finally {
      await app.close();
    }
  });
});
