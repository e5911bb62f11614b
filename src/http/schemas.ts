import { Type } from 'typebox';

/**
 * A database id in a path or query: a positive decimal integer that fits BIGINT UNSIGNED.
 * Kept a string end to end: JavaScript numbers cannot hold every 64-bit id.
 */
export const IdString = Type.String({
  pattern: '^[1-9][0-9]{0,18}$',
  errorMessage: 'must be a positive integer id',
});

export const IdParams = Type.Object({ id: IdString });

/** hmdp's `current`: a 1-based page number. */
export const Current = Type.Integer({ minimum: 1, maximum: 100_000, default: 1, errorMessage: 'must be a page number from 1' });

/**
 * Marks a route for administrators only in its schema (`schema: { ...ADMIN_ONLY, body: … }`).
 * Only documentation: the handler still enforces it (requireAdmin). The abuse test checks that
 * a normal user is refused on every route so marked.
 */
export const ADMIN_ONLY = { 'x-admin-only': true } as const;
