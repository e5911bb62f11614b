import multipart from '@fastify/multipart';
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../http/errors.js';
import { Refusal } from '../../lib/refusals/index.js';
import { ok } from '../../http/result.js';
import { EmptyResult, ResultOf } from '../../http/schemas.js';
import { currentUser } from '../users/auth-hooks.js';
import type { UploadService, UploadStream } from './upload-service.js';
import type { WriteLimits } from './write-limits.js';
import { SOCIAL_MESSAGES } from './messages.js';

/**
 * hmdp's upload routes. hmdp left /upload/** public; here both need a login, because an image
 * is recorded with its owner and only the owner may delete it.
 */
export const uploadRoutes: FastifyPluginAsyncTypebox<{ service: UploadService; limits: WriteLimits; maxBytes: number }> = async (
  app,
  { service, limits, maxBytes },
) => {
  // Scoped to this plugin: only the upload routes accept multipart bodies. Busboy stops a file at
  // the cap (the service answers 413); throwFileSizeLimit is off because the service checks
  // `truncated` itself and deletes what it wrote.
  await app.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 5, parts: 6 }, throwFileSizeLimit: false });

  app.post(
    '/upload/blog',
    {
      schema: {
        summary: 'Upload a blog image (JPEG, PNG, GIF, WebP): data = its name',
        consumes: ['multipart/form-data'],
        response: { 200: ResultOf(Type.String({ description: 'the picture name' })) },
      },
      // Images per hour, counted before a byte is read; the bytes per day once the size is known.
      preHandler: limits.preHandler('upload'),
    },
    async (request) => {
      const user = currentUser(request);
      if (!request.isMultipart()) throw badRequest(SOCIAL_MESSAGES.notMultipart());
      return ok(await service.saveBlogImage(user.id, await imageStream(request)));
    },
  );

  app.get(
    '/upload/blog/delete',
    {
      schema: {
        summary: 'Delete one of my uploaded images',
        querystring: Type.Object({ name: Type.String({ minLength: 1, maxLength: 256 }) }),
        response: { 200: EmptyResult },
      },
    },
    async (request) => {
      await service.deleteBlogImage(currentUser(request).id, request.query.name);
      return ok();
    },
  );
};

/**
 * The stream of the `file` part. @fastify/multipart's own errors carry their status; anything
 * else thrown while parsing comes from busboy reading a malformed body (no boundary, a form that
 * never ends, a broken part header): the client's fault, so 400.
 */
async function imageStream(request: FastifyRequest): Promise<UploadStream> {
  try {
    const file = await request.file();
    if (!file || file.fieldname !== 'file') throw badRequest(SOCIAL_MESSAGES.fileRequired());
    return file.file;
  } catch (err) {
    if (err instanceof Refusal || (err as { statusCode?: number }).statusCode !== undefined) throw err;
    throw badRequest(SOCIAL_MESSAGES.badMultipart({ detail: (err as Error).message }));
  }
}
