import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/infra/config.js';

describe('loadConfig', () => {
  it('works with no variables at all (loopback defaults)', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8081);
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379/0');
    expect(config.mysqlUrl).toBe('mysql://root@127.0.0.1:3306/hmdp');
    expect(config.auth.sessionTtlSeconds).toBe(1800);
    expect(config.auth.loginCodeTtlSeconds).toBe(120);
  });

  it('reads overrides', () => {
    const config = loadConfig({ PORT: '9000', REDIS_CLUSTER_NODES: '127.0.0.1:7000, 127.0.0.1:7001', TRUST_PROXY: '10.0.0.0/8' });
    expect(config.port).toBe(9000);
    expect(config.redisClusterNodes).toEqual(['127.0.0.1:7000', '127.0.0.1:7001']);
    expect(config.trustProxy).toBe('10.0.0.0/8');
  });

  it.each([
    ['PORT', 'eighty', 'Invalid environment variable PORT="eighty": expected an integer from 0 to 65535'],
    ['PORT', '70000', 'PORT="70000"'],
    ['REDIS_URL', 'localhost:6379', 'REDIS_URL'],
    ['REDIS_URL', 'http://127.0.0.1:6379', 'expected a redis: or rediss:// URL'],
    ['MYSQL_URL', 'postgres://x@y/z', 'MYSQL_URL'],
    ['LOG_LEVEL', 'loud', 'expected one of fatal, error'],
    ['SESSION_TTL_SECONDS', '0', 'SESSION_TTL_SECONDS'],
    ['REDIS_CLUSTER_NODES', 'a,b', 'REDIS_CLUSTER_NODES'],
    ['TRUST_PROXY', 'maybe', 'TRUST_PROXY'],
  ])('rejects %s=%s with a message naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});
