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
