import { Type } from 'typebox';

/**
 * A database id as the API writes it: a positive decimal integer that fits BIGINT UNSIGNED, kept
 * a string end to end (a JavaScript number cannot hold every 64-bit id).
 */
export const ID_PATTERN = '^[1-9][0-9]{0,18}$';

/** An id in an answer: a decimal string. */
export const Id = Type.String({ pattern: ID_PATTERN, description: 'a 64-bit id, as a decimal string' });

/** An instant in an answer: ISO 8601 in UTC (`toISOString()`). */
export const Timestamp = Type.String({ format: 'date-time' });
