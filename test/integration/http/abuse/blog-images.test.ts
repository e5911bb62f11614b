import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../../../../src/infra/seed/load-demo-data.js';
import { multipartFile } from '../../../support/multipart.js';
import { buildTestApp, createTestEnv, createUsersWithSessions, type TestEnv } from '../../../support/test-env.js';

/**
 * A blog's images (issue 17 item 6): any path matching ^[\w/.,-]*$ was accepted, e.g.
 * `/../../api/user/me,/../../../etc/passwd`, which every reader's browser then requested. Now a
 * blog shows only images its author uploaded, that no other blog shows, at most 9.
 */

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

let env: TestEnv;
let app: FastifyInstance;
let author: { id: string; token: string };
let other: { id: string; token: string };

beforeAll(async () => {
  env = await createTestEnv();
  await loadDemoData(env.db);
  [author, other] = (await createUsersWithSessions(env, 2, 15_300_000_000)) as [typeof author, typeof other];
  ({ app } = await buildTestApp(env));
});

afterAll(async () => {
  await app?.close();
  await env?.cleanup();
});

async function upload(user: { token: string }): Promise<string> {
  const { payload, headers } = multipartFile(PNG);
  const response = await app.inject({ method: 'POST', url: '/api/upload/blog', payload, headers: { ...headers, authorization: user.token } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data as string;
}

const publish = (user: { token: string }, images: string) =>
  app.inject({ method: 'POST', url: '/api/blog', headers: { authorization: user.token }, payload: { shopId: '1', title: 'a visit', content: 'good', images } });

const blogCount = async () =>
  Number(
    (
      await env.db
        .selectFrom('tb_blog')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const blogOf = async (name: string) => (await env.db.selectFrom('tb_upload').select('blog_id').where('name', '=', name).executeTakeFirstOrThrow()).blog_id;

describe("a blog's images", () => {
  it('refuses paths that are not upload names (traversal, other API paths, outside URLs) with 400 naming body.images, saving nothing', async () => {
    const before = await blogCount();
    for (const images of [
      '/../../api/user/me,/../../../etc/passwd',
      '/blogs/1/2/../../../api/user/me',
      '/imgs/blogs/1/2/a.png',
      '//evil.example.com/x.png',
      '/blogs/1/2/not-a-uuid.png',
    ]) {
      const response = await publish(author, images);
      expect(response.statusCode, images).toBe(400);
      expect(response.json().errorMsg).toContain('body.images');
    }
    expect(await blogCount()).toBe(before);
  });

  it("refuses another user's image, a name nobody uploaded and an image twice; nothing is saved or attached", async () => {
    const mine = await upload(author);
    const theirs = await upload(other);
    const before = await blogCount();
    for (const images of [theirs, `${mine},${theirs}`, '/blogs/1/2/00000000-0000-4000-8000-000000000000.png', `${mine},${mine}`]) {
      const response = await publish(author, images);
      expect(response.statusCode, images).toBe(400);
      expect(response.json().errorMsg).toContain('body.images');
    }
    expect(await blogCount()).toBe(before);
    expect(await blogOf(mine)).toBeNull(); // the refused blog's transaction attached nothing
    expect(await blogOf(theirs)).toBeNull();
  });

  it('accepts up to 9 of my own uploads, attaches them to the blog, and refuses them for a second blog; 10 are refused', async () => {
    const nine = [];
    for (let i = 0; i < 9; i += 1) nine.push(await upload(author));
    const response = await publish(author, nine.join(','));
    expect(response.statusCode, response.body).toBe(200);
    const blogId = response.json().data as string;
    for (const name of nine) expect(await blogOf(name)).toBe(blogId);
    const shown = await app.inject({ url: `/api/blog/${blogId}`, headers: { authorization: other.token } });
    expect(shown.json().data.images).toBe(nine.join(','));

    expect((await publish(author, nine[0]!)).statusCode).toBe(400); // already shown by the first blog
    const ten = [...nine.slice(1), await upload(author), await upload(author)];
    const tooMany = await publish(author, ten.join(','));
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().errorMsg).toContain('at most 9');
  });
});
