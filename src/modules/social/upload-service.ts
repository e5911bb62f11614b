import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileTypeFromFile } from 'file-type';
import { conflict, forbidden, invalid, notFound, Refusal, tooLarge } from '../../lib/refusals/index.js';
import type { UploadRepository } from './upload-repository.js';
import type { WriteLimits } from './write-limits.js';
import { SOCIAL_MESSAGES } from './messages.js';

/** Image types accepted, by sniffed content (never by the client's name or content-type). */
const IMAGE_TYPES = new Set(['jpg', 'png', 'gif', 'webp']);

/** What `POST /upload/blog` hands out: /blogs/{0-15}/{0-15}/{uuid}.{ext}. Anything else is refused. */
export const BLOG_IMAGE_NAME =
  /^\/blogs\/(?:1[0-5]|[0-9])\/(?:1[0-5]|[0-9])\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.(?:jpg|png|gif|webp)$/;

/** Folder (under the root, a dotfile @fastify/static never serves) of uploads still being received. */
const TEMP_FOLDER = '.tmp';

/** An upload's bytes as @fastify/multipart hands them over: busboy sets `truncated` when the size cap cut the file. */
export type UploadStream = Readable & { truncated?: boolean };

/** Upload outcomes, for upload_files_total / upload_bytes_total. */
export interface UploadEvents {
  onStored?(bytes: number): void;
  onRefused?(reason: 'too_large' | 'not_image' | 'over_quota'): void;
}

export interface UploadServiceOptions {
  root: string;
  /** Largest file; busboy stops reading past it (UPLOAD_MAX_BYTES). */
  maxBytes: number;
  limits: WriteLimits;
  events?: UploadEvents;
}

/**
 * Blog images (hmdp "上传图片"): stored under `root` as /blogs/{d1}/{d2}/{uuid}.{ext} (two
 * levels of 16 folders, as hmdp spreads them) and served by @fastify/static under /imgs/.
 * An upload streams to a temporary file (never more than maxBytes, never whole in memory), its
 * type is sniffed from the first bytes, its size charged to the owner's daily quota, and only
 * then is it recorded and renamed into place.
 */
export class UploadService {
  readonly root: string;
  private readonly tempDir: string;

  constructor(
    private readonly uploads: UploadRepository,
    private readonly options: UploadServiceOptions,
  ) {
    this.root = resolve(options.root);
    this.tempDir = join(this.root, TEMP_FOLDER);
  }

  /** Stores an image and returns its name: 413 over the size cap, 400 not an image, 429 over the daily bytes. */
  async saveBlogImage(userId: string, stream: UploadStream): Promise<string> {
    const temp = await this.receive(stream);
    try {
      const size = (await stat(temp)).size;
      const type = await fileTypeFromFile(temp);
      if (!type || !IMAGE_TYPES.has(type.ext)) {
        this.options.events?.onRefused?.('not_image');
        throw invalid(SOCIAL_MESSAGES.notAnImage({ got: type ? ` (${type.mime})` : '' }));
      }
      await this.options.limits.chargeBytes(userId, size).catch((err: unknown) => {
        this.options.events?.onRefused?.('over_quota');
        throw err;
      });
      const name = imageName(type.ext);
      // Recorded before it is in place: a crash in between leaves a record without a file, which
      // the sweeper removes, never a file nobody knows of.
      await this.uploads.insert(userId, name, size);
      try {
        await mkdir(dirname(this.pathOf(name)), { recursive: true });
        await rename(temp, this.pathOf(name));
      } catch (err) {
        await this.uploads.deleteUnattached(name).catch(() => undefined);
        throw err;
      }
      this.options.events?.onStored?.(size);
      return name;
    } finally {
      await removeFile(temp); // gone already when renamed
    }
  }

  /** Streams the upload into a new temporary file; 413 (file deleted) when busboy cut it at maxBytes. */
  private async receive(stream: UploadStream): Promise<string> {
    await mkdir(this.tempDir, { recursive: true });
    const temp = join(this.tempDir, randomUUID());
    try {
      await pipeline(stream, createWriteStream(temp, { flags: 'wx' }));
    } catch (err) {
      await removeFile(temp);
      if (err instanceof Refusal || (err as { statusCode?: number }).statusCode !== undefined) throw err;
      // A failing disk is ours (500); anything else went wrong reading the body: the client's (400).
      if ((err as NodeJS.ErrnoException).syscall !== undefined) throw err;
      throw invalid(SOCIAL_MESSAGES.badMultipart({ detail: (err as Error).message }));
    }
    if (stream.truncated === true) {
      await removeFile(temp);
      this.options.events?.onRefused?.('too_large');
      throw tooLarge(SOCIAL_MESSAGES.fileTooLarge({ max: this.options.maxBytes }));
    }
    return temp;
  }

  /**
   * Deletes an image the user uploaded: 400 for a name we never hand out, 404 unknown, 403 someone
   * else's, 409 shown by a blog (deleting it would break the blog).
   */
  async deleteBlogImage(userId: string, name: string): Promise<void> {
    if (!BLOG_IMAGE_NAME.test(name)) throw invalid(SOCIAL_MESSAGES.badImagePath());
    const path = this.pathOf(name);
    const upload = await this.uploads.find(name);
    if (upload === undefined) throw notFound(SOCIAL_MESSAGES.imageNotFound({ name }));
    if (upload.userId !== userId) throw forbidden(SOCIAL_MESSAGES.notYourImage());
    if (upload.blogId !== null || !(await this.uploads.deleteUnattached(name))) {
      throw conflict(SOCIAL_MESSAGES.imageInUse({ name }));
    }
    await removeFile(path);
  }

  /** Deletes the file of a record that is gone (the sweeper). */
  async removeImageFile(name: string): Promise<void> {
    await removeFile(this.pathOf(name));
  }

  /** Deletes temporary files older than `cutoffMs` (uploads cut short by a crash). */
  async removeStaleTempFiles(cutoffMs: number): Promise<number> {
    const names = await readdir(this.tempDir).catch(() => [] as string[]);
    let removed = 0;
    for (const name of names) {
      const path = join(this.tempDir, name);
      const info = await stat(path).catch(() => undefined);
      if (info && info.mtimeMs < cutoffMs) {
        await removeFile(path);
        removed += 1;
      }
    }
    return removed;
  }

  /** The file of a name, refusing anything that would resolve outside the root (defence in depth). */
  pathOf(name: string): string {
    const path = resolve(this.root, `.${name}`);
    if (!path.startsWith(this.root + sep)) throw invalid(SOCIAL_MESSAGES.outsideUploads());
    return path;
  }
}

function imageName(ext: string): string {
  const uuid = randomUUID();
  const d1 = parseInt(uuid.slice(0, 1), 16);
  const d2 = parseInt(uuid.slice(1, 2), 16);
  return `/blogs/${d1}/${d2}/${uuid}.${ext}`;
}

async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  });
}
