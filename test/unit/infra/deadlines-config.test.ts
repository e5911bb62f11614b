import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/infra/config.js';
import { DependencyUnavailable, isTransient, unavailableDependency } from '../../../src/infra/transient-errors.js';

describe('deadline settings', () => {
  it('derive the Redis and MySQL bounds from the request deadline: half of it each by default', () => {
    expect(loadConfig({}).deadlines).toEqual({ requestMs: 2000, redisCommandMs: 1000, mysqlQueryMs: 1000, mysqlConnectMs: 1000 });
    expect(loadConfig({ REQUEST_DEADLINE_MS: '600' }).deadlines).toEqual({ requestMs: 600, redisCommandMs: 300, mysqlQueryMs: 300, mysqlConnectMs: 300 });
    expect(loadConfig({ REQUEST_DEADLINE_MS: '3000', REDIS_COMMAND_TIMEOUT_MS: '250' }).deadlines.redisCommandMs).toBe(250);
  });

  it('refuse a dependency bound longer than the request deadline, naming the variable', () => {
    expect(() => loadConfig({ REQUEST_DEADLINE_MS: '1000', MYSQL_QUERY_TIMEOUT_MS: '5000' })).toThrow(ConfigError);
    expect(() => loadConfig({ REQUEST_DEADLINE_MS: '1000', MYSQL_QUERY_TIMEOUT_MS: '5000' })).toThrow(
      /MYSQL_QUERY_TIMEOUT_MS="5000": expected an integer from 10 to 1000/,
    );
    expect(() => loadConfig({ REQUEST_DEADLINE_MS: '0' })).toThrow(/REQUEST_DEADLINE_MS/);
  });
});

describe('which dependency an error names', () => {
  it('tells a stalled Redis (command timeout) from an unreachable one, and finds a wrapped MySQL error through its causes', () => {
    expect(unavailableDependency(new Error('Command timed out'))).toEqual({ dependency: 'Redis', stalled: true });
    expect(unavailableDependency(new Error('Connection is closed.'))).toEqual({ dependency: 'Redis', stalled: false });
    const mysql = new DependencyUnavailable('MySQL', 'mysql://root@db:3306/hmdp', true, new Error('Query inactivity timeout'));
    expect(unavailableDependency(new Error('Migration failed', { cause: mysql }))).toEqual({ dependency: 'MySQL', stalled: true });
    expect(isTransient(mysql)).toBe(true);
    expect(isTransient(new Error('Command timed out'))).toBe(true);
    expect(unavailableDependency(new Error('Duplicate entry'))).toBeUndefined();
  });
});
