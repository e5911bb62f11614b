import type { FastifyInstance } from 'fastify';

export type Auth = { authorization: string };

/** Small request helpers over app.inject for the social routes. */
export function client(app: FastifyInstance) {
  return {
    get: (url: string, headers: Partial<Auth> = {}) => app.inject({ method: 'GET', url, headers }),
    put: (url: string, headers: Partial<Auth> = {}) => app.inject({ method: 'PUT', url, headers }),
    post: (url: string, payload: Record<string, unknown> | undefined, headers: Partial<Auth> = {}) =>
      app.inject({ method: 'POST', url, headers, ...(payload ? { payload } : {}) }),
  };
}

export const auth = (user: { token: string }): Auth => ({ authorization: user.token });
