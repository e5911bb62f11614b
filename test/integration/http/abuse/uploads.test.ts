import { existsSync, readdirSync, statSync } from 'node:fs';
import { utimes, writeFile, mkdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../../../../src/infra/metrics.js';
import { buildSocial } from '../../../../src/modules/social/index.js';
import { eventually } from '../../../support/eventually.js';
import { multipartFile } from '../../../support/multipart.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';

/**
 * Uploads under hostile use (issue 17 item 1): one user stored 300 MB in 2.4 s with 60 parallel
 * 5 MB images, each buffered whole in memory, and images no blog used stayed forever. Now an
 * upload streams to disk under the size cap, each user has a quota of files per hour and bytes
 * per day (429 past it), a sweeper deletes images left unattached, and /metrics counts bytes.
 */

/** A real 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
const MAX_BYTES = 1024 * 1024;
/** A PNG signature and header followed by padding: sniffed as PNG, as large as we like. */
const bigPng = (bytes: number) => Buffer.concat([PNG, Buffer.alloc(bytes - PNG.length, 7)]);
const IMAGE = 10_000;
const FILES_PER_HOUR = 6;
/** Room for exactly four images of IMAGE bytes a day. */
const BYTES_PER_DAY = 4 * IMAGE + IMAGE / 2;

let env: TestEnv;
let app: FastifyInstance;
let metrics: Metrics;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  env = await createTestEnv({
    UPLOAD_MAX_BYTES: String(MAX_BYTES),
    UPLOAD_FILES_PER_HOUR: String(FILES_PER_HOUR),
    UPLOAD_BYTES_PER_DAY: String(BYTES_PER_DAY),
    UPLOAD_UNATTACHED_TTL_SECONDS: '3600',
  });
  users = await createUsersWithSessions(env, 6, 15_200_000_000);
  metrics = createMetrics();
  ({ app } = await buildTestApp(env, undefined, { metrics }));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

const upload = (user: { token: string }, content: Buffer) => {
  const { payload, headers } = multipartFile(content);
  return app.inject({ method: 'POST', url: '/api/upload/blog', payload, headers: { ...headers, authorization: user.token } });
};

const tempDir = () => join(env.config.upload.dir, '.tmp');
const tempFiles = () => (existsSync(tempDir()) ? readdirSync(tempDir()) : []);
const storedOf = async (userId: string) => env.db.selectFrom('tb_upload').select(['name', 'size']).where('user_id', '=', userId).execute();
const counter = async (result: string) => (await metrics.uploadFiles.get()).values.find((value) => value.labels.result === result)?.value ?? 0;

describe('an upload streams to disk', () => {
  it('writes the bytes to a temporary file while they arrive (never the whole file in memory), then renames it into place', async () => {
    const [user] = users;
    // An instance without the byte quota (this file is larger than it), listening for real.
    const { app: server } = await buildTestApp({ ...env, config: { ...env.config, upload: { ...env.config.upload, bytesPerDay: 0 } } });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { port } = server.server.address() as AddressInfo;
    const content = bigPng(MAX_BYTES - 4096);
    const { payload, headers } = multipartFile(content);
    const half = 512 * 1024;
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/api/upload/blog', headers: { ...headers, authorization: user!.token } });
      request.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      request.on('error', reject);
      request.write(payload.subarray(0, half));
      // The first half is on disk before the client has sent the rest.
      eventually(() => {
        const [temp] = tempFiles();
        expect(temp).toBeDefined();
        expect(statSync(join(tempDir(), temp!)).size).toBeGreaterThan(half / 2);
      }, 10_000).then(
        () => request.end(payload.subarray(half)),
        (err: unknown) => {
          request.destroy();
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
    const { status, body } = await response.finally(() => server.close());
    expect(status, body).toBe(200);
    const name = (JSON.parse(body) as { data: string }).data;
    expect(statSync(join(env.config.upload.dir, name)).size).toBe(content.length);
    expect(tempFiles()).toEqual([]);
  });

  it('stops a file at UPLOAD_MAX_BYTES with 413, deleting what it wrote', async () => {
    const [, user] = users;
    const before = await counter('too_large');
    const response = await upload(user!, bigPng(MAX_BYTES + 1));
    expect(response.statusCode).toBe(413);
    expect(response.json()).toEqual({ success: false, errorMsg: expect.stringContaining(`${MAX_BYTES} bytes`) });
    expect(tempFiles()).toEqual([]);
    expect(await storedOf(user!.id)).toEqual([]);
    expect(await counter('too_large')).toBe(before + 1);
  });
});

describe('per-user upload quota', () => {
  it(`refuses the image after UPLOAD_FILES_PER_HOUR (${FILES_PER_HOUR}) with 429 + Retry-After, before reading it`, async () => {
    const [, , user, other] = users;
    const answers = [];
    for (let i = 0; i < FILES_PER_HOUR + 2; i += 1) answers.push(await upload(user!, PNG));
    expect(answers.map((answer) => answer.statusCode)).toEqual([...Array<number>(FILES_PER_HOUR).fill(200), 429, 429]);
    const refused = answers[FILES_PER_HOUR]!;
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.json().errorMsg).toContain('Too many images');
    expect(await storedOf(user!.id)).toHaveLength(FILES_PER_HOUR);
    // Another user is not affected.
    expect((await upload(other!, PNG)).statusCode).toBe(200);
  });

  it('holds the bytes per day under 60 parallel uploads: exactly what fits is stored, the rest 429, nothing left behind', async () => {
    const [, , , , user] = users;
    const bytesBefore = (await metrics.uploadBytes.get()).values[0]?.value ?? 0;
    const quotaBefore = await counter('over_quota');
    const answers = await Promise.all(Array.from({ length: 60 }, () => upload(user!, bigPng(IMAGE))));
    const statuses = answers.map((answer) => answer.statusCode);
    // The files-per-hour rule refuses most before they are read; the bytes rule the rest.
    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    const stored = await storedOf(user!.id);
    expect(stored).toHaveLength(4);
    for (const { name } of stored) expect(statSync(join(env.config.upload.dir, name)).size).toBe(IMAGE);
    expect(tempFiles()).toEqual([]);
    expect(await counter('over_quota')).toBe(quotaBefore + (FILES_PER_HOUR - 4));
    expect((await metrics.uploadBytes.get()).values[0]?.value).toBe(bytesBefore + 4 * IMAGE);
    expect(await metrics.registry.metrics()).toMatch(/^upload_bytes_total \d+/m);
  });
});

describe('the sweeper of unattached images', () => {
  it('deletes images no blog shows after UPLOAD_UNATTACHED_TTL_SECONDS (record and file), spares attached and recent ones, one instance per run', async () => {
    const [, , , , , user] = users;
    await env.db.insertInto('tb_shop_type').values({ name: 'food' }).execute();
    const typeId = (await env.db.selectFrom('tb_shop_type').select('id').executeTakeFirstOrThrow()).id;
    await env.db.insertInto('tb_shop').values({ id: '1', name: 'Noodles', type_id: typeId, area: '', address: 'a', x: 120, y: 30, open_hours: '' }).execute();
    const names = [];
    for (let i = 0; i < 3; i += 1) names.push((await upload(user!, PNG)).json().data as string);
    const [attached, old, recent] = names as [string, string, string];
    const blog = await app.inject({
      method: 'POST',
      url: '/api/blog',
      headers: { authorization: user!.token },
      payload: { shopId: '1', title: 'with a photo', content: 'nice', images: attached },
    });
    expect(blog.statusCode, blog.body).toBe(200);
    // Two of them uploaded two hours ago; a temporary file left by a crash a day ago.
    await sql`UPDATE tb_upload SET create_time = create_time - INTERVAL 2 HOUR WHERE name IN (${attached}, ${old})`.execute(env.db);
    await mkdir(tempDir(), { recursive: true });
    const stale = join(tempDir(), 'left-by-a-crash');
    await writeFile(stale, 'x');
    await utimes(stale, new Date(Date.now() - 86_400_000), new Date(Date.now() - 86_400_000));

    // Two instances' sweepers race for the run: one claims it, the other skips.
    const sweepers = [0, 1].map(
      () =>
        buildSocial({
          config: { ...env.config, upload: { ...env.config.upload, sweepIntervalSeconds: 60 } },
          redis: env.redis,
          db: env.db,
          log: app.log,
          metrics,
        }).uploadSweeper,
    );
    const swept = await Promise.all(sweepers.map((sweeper) => sweeper.runIfClaimed()));
    expect(swept.sort()).toEqual([1, null]);

    const file = (name: string) => join(env.config.upload.dir, name);
    expect(existsSync(file(old))).toBe(false);
    expect(existsSync(file(attached))).toBe(true);
    expect(existsSync(file(recent))).toBe(true);
    expect(existsSync(stale)).toBe(false);
    expect((await storedOf(user!.id)).map((row) => row.name).sort()).toEqual([attached, recent].sort());
    expect(await counter('swept')).toBe(1);
    expect((await app.inject({ url: `/imgs${attached}` })).statusCode).toBe(200);
    // The owner cannot delete an image a blog shows.
    const remove = await app.inject({ url: `/api/upload/blog/delete?name=${encodeURIComponent(attached)}`, headers: { authorization: user!.token } });
    expect(remove.statusCode).toBe(409);
    expect(existsSync(file(attached))).toBe(true);
  });
});
