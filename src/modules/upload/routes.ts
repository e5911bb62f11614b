import multipart from '@fastify/multipart';
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { badRequest } from '../../http/errors.js';
import { ok } from '../../http/result.js';
import { currentUser } from '../user/auth-hooks.js';
import type { UploadService } from './service.js';

/**
 * hmdp's upload routes. hmdp left /upload/** public; here both need a login, because an image
 * is recorded with its owner and only the owner may delete it.
 */
export const uploadRoutes: FastifyPluginAsyncTypebox<{ service: UploadService; maxBytes: number }> = async (app, { service, maxBytes }) => {
  // Scoped to this plugin: only the upload routes accept multipart bodies. A file over the cap
  // makes toBuffer() throw @fastify/multipart's RequestFileTooLargeError (413).
  await app.register(multipart, { limits: { fileSize: maxBytes, files: 1, fields: 5, parts: 6 } });

  app.post('/upload/blog', { schema: { summary: 'Upload a blog image (JPEG, PNG, GIF, WebP): data = its name', consumes: ['multipart/form-data'] } }, async (request) => {
    const user = currentUser(request);
    if (!request.isMultipart()) throw badRequest('body must be multipart/form-data with the image in field "file"');
    const file = await request.file();
    if (!file || file.fieldname !== 'file') throw badRequest('body.file is required');
    return ok(await service.saveBlogImage(user.id, await file.toBuffer()));
  });

  app.get(
    '/upload/blog/delete',
    { schema: { summary: 'Delete one of my uploaded images', querystring: Type.Object({ name: Type.String({ minLength: 1, maxLength: 256 }) }) } },
    async (request) => {
      await service.deleteBlogImage(currentUser(request).id, request.query.name);
      return ok();
    },
  );
};
