import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../../src/infra/migrate.js';
import { DEMO_SECKILL_VOUCHER_ID } from '../../../src/infra/seed/demo-data.js';
import { loadDemoData } from '../../../src/infra/seed/load-demo-data.js';
import { createTestEnv, type TestEnv } from '../../support/test-env.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createTestEnv();
});

afterAll(async () => {
  await env?.cleanup();
});

describe('schema', () => {
  it("has hmdp's eleven tables (+ tb_upload, tb_seckill_audit) in utf8mb4", async () => {
    const { rows } = await sql<{ name: string; collation: string }>`
      SELECT TABLE_NAME AS name, TABLE_COLLATION AS collation FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'tb\\_%' ORDER BY TABLE_NAME`.execute(env.db);
    expect(rows.map((row) => row.name)).toEqual([
      'tb_blog',
      'tb_blog_comments',
      'tb_follow',
      'tb_seckill_audit',
      'tb_seckill_voucher',
      'tb_shop',
      'tb_shop_type',
      'tb_sign',
      'tb_upload',
      'tb_user',
      'tb_user_info',
      'tb_voucher',
      'tb_voucher_order',
    ]);
    for (const row of rows) expect(row.collation).toMatch(/^utf8mb4_/);
  });

  it('migrating again is a no-op', async () => {
    expect(await migrateToLatest(env.db)).toEqual([]);
  });

  it('refuses a second order of one user for one voucher', async () => {
    const order = { user_id: '7', voucher_id: '9' };
    await env.db
      .insertInto('tb_voucher_order')
      .values({ id: '9223372036854775807', ...order })
      .execute();
    await expect(
      env.db
        .insertInto('tb_voucher_order')
        .values({ id: '2', ...order })
        .execute(),
    ).rejects.toThrow(/Duplicate entry/);
    const row = await env.db.selectFrom('tb_voucher_order').select('id').executeTakeFirstOrThrow();
    expect(row.id).toBe('9223372036854775807'); // a 63-bit id survives the round trip exactly
  });

  it('refuses negative seckill stock and a window that ends before it begins', async () => {
    const begin = new Date('2030-01-01T00:00:00Z');
    await expect(
      env.db
        .insertInto('tb_seckill_voucher')
        .values({ voucher_id: '100', stock: -1, begin_time: begin, end_time: new Date('2030-02-01Z') })
        .execute(),
    ).rejects.toThrow(/CONSTRAINT|check/i);
    await expect(env.db.insertInto('tb_seckill_voucher').values({ voucher_id: '101', stock: 1, begin_time: begin, end_time: begin }).execute()).rejects.toThrow(
      /CONSTRAINT|check/i,
    );
  });

  it('stores and reads times as UTC', async () => {
    const begin = new Date('2030-01-01T08:00:00Z');
    await env.db
      .insertInto('tb_seckill_voucher')
      .values({ voucher_id: '102', stock: 1, begin_time: begin, end_time: new Date('2030-01-02T08:00:00Z') })
      .execute();
    const row = await env.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', '102').executeTakeFirstOrThrow();
    expect(row.begin_time.toISOString()).toBe('2030-01-01T08:00:00.000Z');
    const raw = await sql<{ t: string }>`SELECT DATE_FORMAT(begin_time, '%H:%i') AS t FROM tb_seckill_voucher WHERE voucher_id = 102`.execute(env.db);
    expect(raw.rows[0]?.t).toBe('08:00');
  });
});

describe('demo data', () => {
  it('loads shop types, 50+ shops in Hangzhou, users and an open seckill voucher; a second load adds nothing', async () => {
    const now = new Date();
    const first = await loadDemoData(env.db, now);
    expect(first.shopTypes).toBe(10);
    expect(first.shops).toBeGreaterThanOrEqual(50);
    expect(first.vouchers).toBeGreaterThanOrEqual(3);

    const shops = await env.db.selectFrom('tb_shop').select(['x', 'y', 'type_id']).execute();
    for (const shop of shops) {
      expect(shop.x).toBeGreaterThan(120.0); // Hangzhou's urban districts
      expect(shop.x).toBeLessThan(120.3);
      expect(shop.y).toBeGreaterThan(30.15);
      expect(shop.y).toBeLessThan(30.4);
    }
    expect(new Set(shops.map((shop) => shop.type_id)).size).toBe(10);

    const seckill = await env.db.selectFrom('tb_seckill_voucher').selectAll().where('voucher_id', '=', DEMO_SECKILL_VOUCHER_ID).executeTakeFirstOrThrow();
    expect(seckill.stock).toBeGreaterThan(0);
    expect(seckill.begin_time.getTime()).toBeLessThan(now.getTime());
    expect(seckill.end_time.getTime()).toBeGreaterThan(now.getTime());

    expect(await loadDemoData(env.db, new Date())).toEqual({ shopTypes: 0, shops: 0, users: 0, vouchers: 0 });
    const count = await env.db
      .selectFrom('tb_shop')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(first.shops);
  });
});
