import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartFile } from '../../../support/multipart.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';
import { auth } from './support.js';

const MAX_BYTES = 2048;
/** A real 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

let env: TestEnv;
let app: FastifyInstance;
let users: Array<{ id: string; token: string }>;

beforeAll(async () => {
  env = await createTestEnv({ UPLOAD_MAX_BYTES: String(MAX_BYTES) });
  users = await createUsersWithSessions(env, 2, 15_700_000_000);
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function upload(user: { token: string } | null, content: Buffer, filename?: string, contentType?: string, field?: string) {
  const { payload, headers } = multipartFile(content, { filename, contentType, field });
  return app.inject({ method: 'POST', url: '/api/upload/blog', payload, headers: { ...headers, ...(user ? auth(user) : {}) } });
}

const remove = (user: { token: string } | null, name: string) =>
  app.inject({ url: `/api/upload/blog/delete?name=${encodeURIComponent(name)}`, headers: user ? auth(user) : {} });

describe('blog image upload', () => {
  it('stores a real image under a random name, records its owner and serves it under /imgs/', async () => {
    const [owner] = users;
    const response = await upload(owner!, PNG, '../../evil.php', 'application/x-php');
    expect(response.statusCode, response.body).toBe(200);
    const name = response.json().data as string;
    expect(name).toMatch(/^\/blogs\/\d{1,2}\/\d{1,2}\/[0-9a-f-]{36}\.png$/);
    const file = join(env.config.upload.dir, name);
    expect(readFileSync(file)).toEqual(PNG);
    const row = await env.db.selectFrom('tb_upload').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ user_id: owner!.id, size: PNG.length });
    const served = await app.inject({ url: `/imgs${name}` });
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-type']).toBe('image/png');
    expect(served.rawPayload).toEqual(PNG);
    // Two uploads of one file get two names.
    expect((await upload(owner!, PNG)).json().data).not.toBe(name);
  });

  it('rejects non-images by content (400), whatever the name and content-type claim', async () => {
    const [owner] = users;
    const text = await upload(owner!, Buffer.from('<?php echo "hi"; ?>'), 'photo.png', 'image/png');
    expect(text.statusCode).toBe(400);
    expect(text.json().errorMsg).toContain('image');
    const pdf = await upload(owner!, Buffer.from('%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n'), 'x.jpg', 'image/jpeg');
    expect(pdf.statusCode).toBe(400);
    const wrongField = await upload(owner!, PNG, 'a.png', 'image/png', 'image');
    expect(wrongField.statusCode).toBe(400);
    expect(wrongField.json().errorMsg).toContain('body.file');
  });

  it("answers malformed multipart bodies with 400 (busboy's parse errors are the client's), storing nothing", async () => {
    const [owner] = users;
    const before = await env.db.selectFrom('tb_upload').select('id').execute();
    const boundary = '----b';
    const bodies: Array<[string, string]> = [
      ['multipart/form-data', 'no boundary'],
      [
        `multipart/form-data; boundary=${boundary}`,
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n${PNG.toString('latin1')}`,
      ],
      [`multipart/form-data; boundary=${boundary}`, 'garbage \u0000 garbage'],
    ];
    for (const [contentType, payload] of bodies) {
      const response = await app.inject({ method: 'POST', url: '/api/upload/blog', headers: { ...auth(owner!), 'content-type': contentType }, payload });
      expect(response.statusCode, payload.slice(0, 20)).toBe(400);
      expect(response.json().errorMsg).toMatch(/multipart|body\.file/);
    }
    expect(await env.db.selectFrom('tb_upload').select('id').execute()).toHaveLength(before.length);
  });

  it('refuses files over UPLOAD_MAX_BYTES with 413 and leaves nothing behind', async () => {
    const [owner] = users;
    const before = await env.db.selectFrom('tb_upload').select('id').execute();
    const big = Buffer.concat([PNG, Buffer.alloc(MAX_BYTES)]);
    const response = await upload(owner!, big);
    expect(response.statusCode).toBe(413);
    expect(response.json().success).toBe(false);
    expect(await env.db.selectFrom('tb_upload').select('id').execute()).toHaveLength(before.length);
  });

  it("deletes only the owner's images, refuses path traversal and unknown names", async () => {
    const [owner, other] = users;
    const name = (await upload(owner!, PNG)).json().data as string;
    const file = join(env.config.upload.dir, name);
    expect((await remove(other!, name)).statusCode).toBe(403);
    expect(existsSync(file)).toBe(true);
    for (const evil of ['../../../etc/passwd', '/blogs/../../../etc/passwd', '/blogs/1/2/../../../x.png', `${name}/../../x.png`, '/etc/passwd']) {
      const response = await remove(owner!, evil);
      expect(response.statusCode, evil).toBe(400);
      expect(response.json().errorMsg).toContain('querystring.name');
    }
    expect((await remove(owner!, '/blogs/1/2/00000000-0000-0000-0000-000000000000.png')).statusCode).toBe(404);
    expect((await remove(null, name)).statusCode).toBe(401);
    expect((await upload(null, PNG)).statusCode).toBe(401);
    const deleted = await remove(owner!, name);
    expect(deleted.statusCode).toBe(200);
    expect(existsSync(file)).toBe(false);
    expect(await env.db.selectFrom('tb_upload').select('id').where('name', '=', name).execute()).toEqual([]);
    expect((await app.inject({ url: `/imgs${name}` })).statusCode).toBe(404);
    expect((await remove(owner!, name)).statusCode).toBe(404);
  });
});
