import { randomUUID } from 'node:crypto';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { badRequest, forbidden, notFound } from '../../http/errors.js';
import type { UploadRepository } from './upload-repository.js';

/** Image types accepted, by sniffed content (never by the client's name or content-type). */
const IMAGE_TYPES = new Set(['jpg', 'png', 'gif', 'webp']);

/** What `POST /upload/blog` hands out: /blogs/{0-15}/{0-15}/{uuid}.{ext}. Anything else is refused. */
export const BLOG_IMAGE_NAME =
  /^\/blogs\/(?:1[0-5]|[0-9])\/(?:1[0-5]|[0-9])\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(?:jpg|png|gif|webp)$/;

/**
 * Blog images (hmdp "上传图片"): stored under `root` as /blogs/{d1}/{d2}/{uuid}.{ext} (two
 * levels of 16 folders, as hmdp spreads them) and served by @fastify/static under /imgs/.
 */
export class UploadService {
  readonly root: string;

  constructor(
    private readonly uploads: UploadRepository,
    root: string,
  ) {
    this.root = resolve(root);
  }

  /** Stores an image (content sniffed: not an image → 400) and returns its name. */
  async saveBlogImage(userId: string, content: Buffer): Promise<string> {
    const type = await fileTypeFromBuffer(content);
    if (!type || !IMAGE_TYPES.has(type.ext)) {
      throw badRequest(`file must be a JPEG, PNG, GIF or WebP image${type ? ` (got ${type.mime})` : ''}`);
    }
    const uuid = randomUUID();
    const d1 = parseInt(uuid.slice(0, 1), 16);
    const d2 = parseInt(uuid.slice(1, 2), 16);
    const name = `/blogs/${d1}/${d2}/${uuid}.${type.ext}`;
    const path = this.pathOf(name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content, { flag: 'wx' });
    try {
      await this.uploads.insert(userId, name, content.length);
    } catch (err) {
      await unlink(path).catch(() => undefined);
      throw err;
    }
    return name;
  }

  /** Deletes an image the user uploaded: 400 for a name we never hand out, 404 unknown, 403 someone else's. */
  async deleteBlogImage(userId: string, name: string): Promise<void> {
    if (!BLOG_IMAGE_NAME.test(name)) throw badRequest('querystring.name must be an image path returned by /upload/blog');
    const path = this.pathOf(name);
    const owner = await this.uploads.ownerOf(name);
    if (owner === undefined) throw notFound(`Image ${name} not found`);
    if (owner !== userId) throw forbidden('You may only delete your own images');
    await this.uploads.delete(name);
    await unlink(path).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }

  /** The file of a name, refusing anything that would resolve outside the root (defence in depth). */
  pathOf(name: string): string {
    const path = resolve(this.root, `.${name}`);
    if (!path.startsWith(this.root + sep)) throw badRequest('querystring.name must stay inside the upload folder');
    return path;
  }
}
